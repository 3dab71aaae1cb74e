import EventLoop
import Foundation
import ProxyCore
import ProxyWire
import Testing
import TrafficReport

@testable import ATSProxyDaemon

/// The web listener takes the proxy loops' lines when the feed is half full, not only at its tick:
/// a busy proxy's lines reach the live view instead of being dropped between ticks. The tick here
/// is an hour, so only the wake-up can bring the lines in; a guard timer ends the loop if it never
/// does.
@Suite("web listener: the feed's wake-up")
struct WebListenerFeedTests {
    struct NoPages: LocalSite {
        func reply(to request: LocalRequest) -> LocalReply { .response(.notFound(request.path)) }
    }

    @Test("lines appended on another thread up to half the feed are taken before any tick")
    func takenWhenHalfFull() throws {
        let base = try EventBase()
        let feed = TrafficFeed(capacity: 10)
        var taken: [LoggedEntry] = []
        var guardFired = false
        let listener = try WebListener(
            base: base, address: try SocketAddress(parsing: "127.0.0.1:0"), site: NoPages(), feed: feed,
            access: WebAccess(token: nil),
            limits: SiteConnection.Limits(headTimeout: .seconds(10), idleTimeout: .seconds(10)),
            ingest: { entries, _ in
                taken += entries
                if taken.count >= 5 { base.stopper.stop() }
            },
            update: { nil }, welcome: { nil }, tick: .seconds(3600))
        defer { listener.close() }
        // Against a hang only: the wake-up comes at once, or the test fails here.
        let hangGuard = try EventLoop.Timer(base: base) {
            guardFired = true
            base.stopper.stop()
        }
        hangGuard.schedule(after: .seconds(120))
        let appender = Thread {
            for number in 1...5 { feed.append(Array("line \(number)".utf8)) }
        }
        appender.start()
        base.run()
        #expect(!guardFired, "the web loop was not woken when the feed was half full")
        #expect(taken.count == 5)
    }
}

/// What the live view missed is told at most once a second, all of it in the end.
@Suite("missed live-view lines")
struct MissedLinesTests {
    @Test(
        "told at once the first time, then at most once a second, with what piled up",
        arguments: [
            // (dropped, at milliseconds) for each take, and what each take tells
            ([(0, 0), (0, 250)], [0, 0]),
            ([(5_000, 0), (5_000, 100), (0, 500), (0, 1_000)], [5_000, 0, 0, 5_000]),
            ([(10, 0), (20, 999), (30, 1_998), (0, 3_000)], [10, 0, 50, 0]),
        ] as [([(Int, Int64)], [Int])])
    func told(takes: [(Int, Int64)], expected: [Int]) {
        var missed = MissedLines()
        #expect(takes.map { missed.add($0.0, now: $0.1) } == expected)
    }
}
