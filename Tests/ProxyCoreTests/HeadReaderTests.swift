import EventLoop
import ProxyWire
import Testing

@testable import ProxyCore

/// The one request-head reader the listener, intercept mode and the proxy's pages share, on a
/// scripted stream and the test's own clock.
@Suite("Request head reader")
struct HeadReaderTests {
    static let head = "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n"
    static let oversized = "GET http://example.com/big HTTP/1.1\r\nCookie: " + String(repeating: "c", count: 20_000)

    /// What a read came to, as the test compares it.
    enum Outcome: Equatable {
        case needMore(leftMilliseconds: Int64?)
        case timedOut
        /// `refused`: the refused line's method and target, as the log names them.
        case failed(status: Int, refused: String?)
        case complete(target: String, bytes: Int64)
    }

    /// What `step` came to; a failure with what the reader says its request line showed.
    static func outcome(_ step: HeadReader.Step, refused: RefusedRequestLine? = nil) -> Outcome {
        switch step {
        case .needMore(let left): .needMore(leftMilliseconds: left?.milliseconds)
        case .timedOut: .timedOut
        case .failed(let error):
            .failed(status: error.status, refused: refused.map { "\($0.method) \($0.target)" })
        case .complete(let head, let bytes): .complete(target: head.target.description, bytes: bytes)
        }
    }

    /// Bytes arriving at given times (milliseconds on the test's clock), read after each arrival.
    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let arrivals: [(at: Int64, bytes: String)]
        let outcomes: [Outcome]
        /// What is left buffered for whoever reads after the head (a body, the next request).
        var leftover = ""
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "a whole head at once, with a body behind it", arrivals: [(0, head + "body")],
            outcomes: [.complete(target: "http://example.com/", bytes: Int64(head.utf8.count))], leftover: "body"),
        Case(
            name: "a head in two pieces: the deadline counts from its first byte",
            arrivals: [(1_000, String(head.prefix(20))), (4_000, String(head.dropFirst(20)))],
            outcomes: [
                .needMore(leftMilliseconds: 10_000),
                .complete(target: "http://example.com/", bytes: Int64(head.utf8.count)),
            ]),
        Case(
            name: "a trickle that outlasts the deadline",
            arrivals: [(0, "GET http://exa"), (6_000, "mple.com/ HT"), (10_000, "TP/1.1\r\n")],
            outcomes: [.needMore(leftMilliseconds: 10_000), .needMore(leftMilliseconds: 4_000), .timedOut]),
        Case(name: "nothing yet", arrivals: [(0, "")], outcomes: [.needMore(leftMilliseconds: nil)]),
        // A failure takes nothing: the caller answers and closes.
        Case(
            name: "no request line", arrivals: [(0, "\u{16}\u{3}\u{1}garbage\r\n\r\n")],
            outcomes: [.failed(status: 400, refused: nil)],
            leftover: "\u{16}\u{3}\u{1}garbage\r\n\r\n"),
        // A fault after a whole request line: the line's method and target are kept for the log.
        Case(
            name: "a broken header field after a whole request line",
            arrivals: [(0, "POST http://example.com/upload?x=1 HTTP/1.1\r\nHost example.com\r\n\r\n")],
            outcomes: [.failed(status: 400, refused: "POST http://example.com/upload?x=1")],
            leftover: "POST http://example.com/upload?x=1 HTTP/1.1\r\nHost example.com\r\n\r\n"),
        // The reader takes 16 KiB at a time: the first piece is all head, the fault is in the second.
        Case(
            name: "a head over the size limit",
            arrivals: [(0, oversized)], outcomes: [.failed(status: 431, refused: "GET http://example.com/big")],
            leftover: String(decoding: oversized.utf8.dropFirst(16 * 1024), as: UTF8.self)),
        Case(
            name: "a second Host field, found once the head is whole",
            arrivals: [(0, "CONNECT example.com:443 HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n")],
            outcomes: [.failed(status: 400, refused: "CONNECT example.com:443")],
            leftover: "CONNECT example.com:443 HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n"),
        Case(
            name: "a request line at fault shows nothing",
            arrivals: [(0, "GET  http://example.com/ HTTP/1.1\r\n\r\n")],
            outcomes: [.failed(status: 400, refused: nil)],
            leftover: "GET  http://example.com/ HTTP/1.1\r\n\r\n"),
        Case(
            name: "a whole request line whose target is no proxy target shows nothing",
            arrivals: [(0, "GET /path HTTP/1.1\r\nHost example.com\r\n\r\n")],
            outcomes: [.failed(status: 400, refused: nil)],
            leftover: "GET /path HTTP/1.1\r\nHost example.com\r\n\r\n"),
        Case(
            name: "two pipelined heads, one at a time", arrivals: [(0, head + head), (0, "")],
            outcomes: [
                .complete(target: "http://example.com/", bytes: Int64(head.utf8.count)),
                .complete(target: "http://example.com/", bytes: Int64(head.utf8.count)),
            ]),
    ]

    @Test("reads", arguments: cases)
    func reads(_ test: Case) {
        let playbook = Playbook()
        let stream = ScriptedStream("client", playbook: playbook)
        var reader = HeadReader(origin: nil, limit: .seconds(10))
        var outcomes: [Outcome] = []
        for (at, bytes) in test.arrivals {
            if !bytes.isEmpty { stream.peerSends(bytes) }
            // The clock starts at 0 for the test; the reader measures from the head's first byte.
            let step = reader.read(from: stream, now: { at })
            outcomes.append(Self.outcome(step, refused: reader.refusedLine))
        }
        #expect(outcomes == test.outcomes)
        #expect(String(decoding: stream.peek(maximum: .max), as: UTF8.self) == test.leftover)
    }

    @Test("a reset forgets a head begun")
    func reset() {
        let playbook = Playbook()
        let stream = ScriptedStream("client", playbook: playbook)
        var reader = HeadReader(origin: nil, limit: .seconds(10))
        stream.peerSends("GET http://exam")
        _ = reader.read(from: stream, now: { 0 })
        #expect(reader.hasStarted)
        reader.reset()
        #expect(!reader.hasStarted)
        stream.peerSends(Self.head)
        #expect(
            Self.outcome(reader.read(from: stream, now: { 0 }))
                == .complete(target: "http://example.com/", bytes: Int64(Self.head.utf8.count)))
    }
}
