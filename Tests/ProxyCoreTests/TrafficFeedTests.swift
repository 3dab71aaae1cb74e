import Synchronization
import Testing
import TrafficReport

@testable import ProxyCore

/// ``TrafficFeed``: lines wait for the live view's loop, bounded, with what was dropped counted, and
/// the loop is woken when half the capacity is waiting (so a rate above one tick's worth is taken in
/// time, not dropped).
@Suite("traffic feed")
struct TrafficFeedTests {
    private static func line(_ number: Int) -> [UInt8] { Array("line \(number)".utf8) }

    private static func numbers(_ entries: [LoggedEntry]) -> [String] {
        entries.map { entry in
            guard case .line(let bytes) = entry else { return "not a line" }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    @Test("a feed without a taker keeps nothing")
    func disabledKeepsNothing() {
        let feed = TrafficFeed(capacity: 10)
        feed.append(Self.line(1))
        let (entries, dropped) = feed.take()
        #expect(entries.isEmpty && dropped == 0)
    }

    @Test("past its capacity the oldest lines are dropped and counted, the newest kept in order")
    func boundedWithDropsCounted() {
        let feed = TrafficFeed(capacity: 10)
        feed.isEnabled = true
        for number in 1...25 { feed.append(Self.line(number)) }
        let (entries, dropped) = feed.take()
        #expect(entries.count <= 10)
        #expect(entries.count + dropped == 25)
        #expect(Self.numbers(entries) == (26 - entries.count...25).map { "line \($0)" })
        let (after, droppedAfter) = feed.take()
        #expect(after.isEmpty && droppedAfter == 0)
    }

    @Test("the taker is woken once when half the capacity is waiting, and again after it takes")
    func wokenAtHalf() {
        let feed = TrafficFeed(capacity: 10)
        feed.isEnabled = true
        let wakes = Atomic<Int>(0)
        feed.whenHalfFull { wakes.add(1, ordering: .relaxed) }
        for number in 1...4 { feed.append(Self.line(number)) }
        #expect(wakes.load(ordering: .relaxed) == 0)
        feed.append(Self.line(5))
        #expect(wakes.load(ordering: .relaxed) == 1)
        // Not taken: the queue fills, drops its older half, and does not wake the taker again.
        for number in 6...30 { feed.append(Self.line(number)) }
        #expect(wakes.load(ordering: .relaxed) == 1)
        _ = feed.take()
        for number in 31...35 { feed.append(Self.line(number)) }
        #expect(wakes.load(ordering: .relaxed) == 2)
        feed.whenHalfFull(nil)
        _ = feed.take()
        for number in 36...45 { feed.append(Self.line(number)) }
        #expect(wakes.load(ordering: .relaxed) == 2)
    }
}
