import ATSPolicy
import EventLoop
import Foundation
import Glibc
import LogRecord
import Testing

@testable import ProxyCore

/// Issue 27, item 2: a response cut off before its end (by its framing, or the origin's own clean
/// close of a body that runs until the close) never ends with a clean close towards the client: it
/// gets what was relayed, then a reset, and the line says `response_truncated` with the body bytes.
/// Plain `http://` sessions on scripted streams, the origin sending exactly the repro's bytes;
/// intercept mode's are in ``InterceptTruncationPlaybookTests``.
@Suite("Plain HTTP sessions, scripted: a cut-off response")
struct ResponseTruncationPlaybookTests {
    /// How the origin (or the proxy's idle watch) stops the response short.
    enum Cut: Sendable {
        /// The origin resets its connection (ECONNRESET).
        case reset
        /// The origin sends its FIN.
        case fin
        /// Nothing moves for the idle timeout.
        case idle
        /// The origin sends bytes its framing cannot take (a malformed chunk).
        case sends(String)
    }

    /// A response as the origin sends it, how it stops, and how the line says it stopped.
    struct Shape: Sendable, CustomTestStringConvertible {
        var name: String
        var response: String
        var cut: Cut
        var sentence: String
        var testDescription: String { name }
    }

    static let closeDelimited = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n"
    static let partial = String(repeating: "x", count: 1200)

    static let shapes = [
        Shape(
            name: "a body that runs until the close, the origin's reset", response: closeDelimited + partial,
            cut: .reset, sentence: "the response was cut off after 1200 body bytes: the origin reset the connection"),
        Shape(
            name: "a Content-Length not reached, the origin's FIN",
            response: "HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + partial, cut: .fin,
            sentence:
                "the response was cut off after 1200 body bytes of 5000 (its Content-Length): the origin closed the connection"
        ),
        Shape(
            name: "chunked without its last chunk, the origin's FIN",
            response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", cut: .fin,
            sentence: "the response was cut off after 5 body bytes: the origin closed the connection"),
        Shape(
            name: "a malformed chunk",
            response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", cut: .sends("zz\r\n"),
            sentence: "the response was cut off after 5 body bytes: the origin's response body: "),
        Shape(
            name: "a Content-Length not reached, then nothing for the idle timeout",
            response: "HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + partial, cut: .idle,
            sentence:
                "the response was cut off after 1200 body bytes of 5000 (its Content-Length): closed: idle for 300 s, no byte moved either way"
        ),
        Shape(
            name: "a body that runs until the close, then nothing for the idle timeout",
            response: closeDelimited + partial, cut: .idle,
            sentence: "the response was cut off after 1200 body bytes: closed: idle for 300 s, no byte moved either way"
        ),
    ]

    static func stop(_ origin: ScriptedStream, _ cut: Cut, _ environment: ScriptedEnvironment) throws {
        switch cut {
        case .reset: origin.peerFails(ECONNRESET)
        case .fin: origin.peerEnds()
        case .idle: try #require(environment.idleWatches.last { $0.isWatching }).comeDue()
        case .sends(let bytes): origin.peerSends(bytes)
        }
        environment.playbook.run()
    }

    @Test(
        "the client gets what was relayed, then a reset, never a FIN; the line says response_truncated",
        arguments: shapes)
    func cutOff(_ shape: Shape) throws {
        let (environment, client, origin) = try ExchangePlaybookTests.forwarded()
        origin.peerSends(shape.response)
        environment.playbook.run()
        #expect(client.isOpen && !client.sentEnd)
        try Self.stop(origin, shape.cut, environment)
        #expect(client.wasReset, "the client's connection is reset, not closed")
        #expect(!origin.isOpen)
        let body = shape.response.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
        #expect(client.deliveredText.hasSuffix(body), "what was relayed reached the client before the reset")
        let line = try #require(environment.records.first)
        #expect(line.failure == .responseTruncated)
        #expect(line.status == 200)
        #expect(line.upstreamError?.hasPrefix(shape.sentence) == true, "\(String(describing: line.upstreamError))")
    }

    @Test("what was queued for a slow client is written out before the reset")
    func flushedFirst() throws {
        let (environment, client, origin) = try ExchangePlaybookTests.forwarded()
        client.takesEverything = false
        origin.peerSends(Self.closeDelimited + Self.partial)
        origin.peerFails(ECONNRESET)
        environment.playbook.run()
        #expect(client.isOpen && !client.wasReset, "bytes still wait for the client")
        #expect(environment.records.first?.failure == .responseTruncated, "the line is written at the cut")
        client.peerTakes()
        environment.playbook.run()
        #expect(client.wasReset)
        #expect(client.deliveredText.hasSuffix("\r\n\r\n" + Self.partial))
    }

    @Test("a client that takes nothing of what was queued is reset at the write limit all the same")
    func resetAtWriteLimit() throws {
        let (environment, client, origin) = try ExchangePlaybookTests.forwarded()
        client.takesEverything = false
        origin.peerSends(Self.closeDelimited + Self.partial)
        origin.peerFails(ECONNRESET)
        environment.playbook.run()
        #expect(client.writeLimitPasses())
        environment.playbook.run()
        #expect(client.wasReset)
    }

    @Test("control: a body that runs until the origin's FIN is whole; the client's connection ends with a FIN")
    func cleanClose() throws {
        let (environment, client, origin) = try ExchangePlaybookTests.forwarded()
        origin.peerSends(Self.closeDelimited + Self.partial)
        origin.peerEnds()
        environment.playbook.run()
        #expect(client.sentEnd && !client.wasReset, "a clean close")
        #expect(client.deliveredText.hasSuffix("\r\n\r\n" + Self.partial))
        let line = try #require(environment.records.first)
        #expect(line.failure == nil && line.upstreamError == nil)
    }
}
