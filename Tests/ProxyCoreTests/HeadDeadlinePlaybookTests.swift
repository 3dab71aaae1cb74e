import EventLoop
import Testing

@testable import ProxyCore

/// The listener's head deadline on the test's clock: it counts from a head's first byte, so bytes
/// that trickle in do not extend it, whichever way it is found (the stream's read limit set to
/// what is left, or the reader's own check when a byte comes late); the 408's line names a request
/// line that came whole.
@Suite("Head deadline, scripted")
struct HeadDeadlinePlaybookTests {
    static let requestLine = "GET http://localhost:8080/slow HTTP/1.1\r\n"

    /// A session with `requestLine` in at the clock's start, and `later` ms after it one more byte.
    static func trickled(later: Int64) throws -> (ScriptedEnvironment, ScriptedStream) {
        let environment = try ScriptedEnvironment(policyXML: "")
        let client = ScriptedStream("client", playbook: environment.playbook)
        _ = environment.startSession(client: client)
        client.peerSends(requestLine)
        environment.playbook.run()
        environment.advance(by: .milliseconds(later))
        client.peerSends("X-Slow: a")
        environment.playbook.run()
        return (environment, client)
    }

    @Test("a byte just before the deadline leaves the read limit at what is left of it, not a new one")
    func readLimitIsWhatIsLeft() throws {
        let (environment, client) = try Self.trickled(later: 1_200)
        let timeout = environment.settings.headTimeout
        #expect(client.readLimit == timeout - .milliseconds(1_200))
        #expect(client.readLimitPasses())
        environment.playbook.run()
        #expect(client.deliveredText.hasPrefix("HTTP/1.1 408 "), "\(client.deliveredText)")
        let line = try #require(environment.records.first)
        #expect(line.method == "GET" && line.host == "localhost" && line.port == 8080, "\(line)")
    }

    @Test("a byte after the deadline is answered with the 408 at once, by the reader's own check")
    func lateByteFindsTheDeadlinePassed() throws {
        let deadline = try ScriptedEnvironment(policyXML: "").settings.headTimeout
        let (environment, client) = try Self.trickled(later: deadline.milliseconds + 1)
        #expect(client.deliveredText.hasPrefix("HTTP/1.1 408 "), "\(client.deliveredText)")
        let line = try #require(environment.records.first)
        #expect(line.method == "GET" && line.host == "localhost" && line.port == 8080, "\(line)")
    }
}
