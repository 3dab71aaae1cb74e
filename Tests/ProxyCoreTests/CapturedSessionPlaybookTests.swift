import ATSPolicy
import EventLoop
import Foundation
import LogRecord
import TLSTestSupport
import Testing

@testable import ProxyCore

/// Connections a firewall redirected to the transparent listener (``SessionCapture``), driven by
/// scripted streams and a scripted resolver: what a graceful stop does to a ClientHello under way,
/// and a line that waits for the server name's lookup. The same paths run end to end, in network
/// namespaces, in the daemon's capture tests.
@Suite("Captured connections, scripted")
struct CapturedSessionPlaybookTests {
    static let host = "api.example.com"
    static let dialled = try! SocketAddress(parsing: "203.0.113.7:443")
    static let capture = SessionCapture.redirected(original: dialled, path: .transparent)

    @Test("a graceful stop lets a ClientHello under way finish; cut when the drain time is up, its line says so")
    func helloUnderWayAtStop() throws {
        let environment = try ScriptedEnvironment(policyXML: "")
        let client = ScriptedStream("client", playbook: environment.playbook)
        let session = environment.startSession(client: client, capture: Self.capture)
        client.peerSends(Array(TestClientHello(serverName: Self.host).records().prefix(10)))
        environment.playbook.run()

        session.drain()
        environment.playbook.run()
        #expect(environment.ended.isEmpty, "the drain cut a device halfway through its ClientHello")
        #expect(client.isOpen)

        session.closeForShutdown()
        environment.playbook.run()
        let line = try #require(environment.records.first)
        #expect(environment.records.count == 1)
        #expect(line.failure == .shutdown)
        #expect(line.host == "203.0.113.7" && line.port == 443)
        #expect(line.capture == .transparent && line.originalDestination == "203.0.113.7:443")
    }

    @Test(
        "a captured head refused after its request line is logged as a complete one would be: the port dialled",
        arguments: [
            ("GET http://api.example.com/upload HTTP/1.1", "api.example.com"),
            ("GET /upload HTTP/1.1", "203.0.113.7"),  // its Host field may be the fault: the address dialled
            ("CONNECT api.example.com:443 HTTP/1.1", "api.example.com"),
        ])
    func refusedHeadOnTheDialledPort(_ requestLine: String, host: String) throws {
        let environment = try ScriptedEnvironment(policyXML: "")
        let client = ScriptedStream("client", playbook: environment.playbook)
        let dialled = try SocketAddress(parsing: "203.0.113.7:8080")
        _ = environment.startSession(client: client, capture: .redirected(original: dialled, path: .transparent))
        let fields = (0..<150).map { "X-Filler-\($0): y\r\n" }.joined()
        client.peerSends(Array("\(requestLine)\r\nHost: api.example.com\r\n\(fields)\r\n".utf8))
        environment.playbook.run()
        #expect(client.deliveredText.hasPrefix("HTTP/1.1 431 "), "\(client.deliveredText)")
        let line = try #require(environment.records.first)
        #expect(line.method == String(requestLine.prefix { $0 != " " }))
        #expect(line.host == host && line.port == 8080 && line.scheme == .http, "\(line)")
    }

    /// A captured connection whose ClientHello names `host`, judged, relayed, then reset by the
    /// device: its line is due while the server name's lookup is still out.
    static func endedBeforeTheLookup() throws -> ScriptedEnvironment {
        let environment = try ScriptedEnvironment(policyXML: "")
        let client = ScriptedStream("client", playbook: environment.playbook)
        _ = environment.startSession(client: client, capture: Self.capture)
        client.peerSends(TestClientHello(serverName: Self.host).records())
        environment.playbook.run()
        #expect(environment.lookups.map(\.host) == [Self.host])
        let verdict = try #require(environment.verdicts.first)
        #expect(verdict.key.address?.description == "203.0.113.7:443", "probed at the address dialled")
        verdict.answer(ProbeResult(observed: compliantFacts(for: Self.host), address: Self.dialled))
        environment.playbook.run()
        let upstream = ScriptedStream("upstream", playbook: environment.playbook)
        try #require(environment.dials.first).connect(upstream, address: Self.dialled)
        environment.playbook.run()
        client.peerFails(ECONNRESET)
        environment.playbook.run()
        #expect(environment.ended.count == 1)
        #expect(environment.records.isEmpty, "the line did not wait for the server name's lookup")
        return environment
    }

    @Test("the line waits for the lookup, past the session's end, and flags a name that resolves elsewhere")
    func lineWaitsForTheLookup() throws {
        let environment = try Self.endedBeforeTheLookup()
        environment.lookups[0].answer(.success([try SocketAddress(parsing: "198.51.100.9:443")]))
        environment.playbook.run()
        let line = try #require(environment.records.first)
        #expect(line.host == Self.host)
        #expect(
            line.serverNameMismatch?.contains("resolves to 198.51.100.9") == true, "\(line.serverNameMismatch ?? "nil")"
        )
    }

    @Test("the loop ending before the lookup answers writes the line, flagging nothing it does not know")
    func loopEndsFirst() throws {
        let environment = try Self.endedBeforeTheLookup()
        environment.linesAwaitingChecks.releaseAll()
        environment.playbook.run()
        let line = try #require(environment.records.first)
        #expect(environment.records.count == 1)
        #expect(line.serverNameMismatch == nil)
        #expect(environment.linesAwaitingChecks.count == 0)
        // A late answer writes nothing more.
        environment.lookups[0].answer(.success([try SocketAddress(parsing: "198.51.100.9:443")]))
        environment.playbook.run()
        #expect(environment.records.count == 1)

        let unresolved = try Self.endedBeforeTheLookup()
        unresolved.lookups[0].answer(.failure(AddressLookupError(reason: "name does not resolve")))
        unresolved.playbook.run()
        #expect(unresolved.records.first?.serverNameMismatch?.contains("does not resolve") == true)
    }
}
