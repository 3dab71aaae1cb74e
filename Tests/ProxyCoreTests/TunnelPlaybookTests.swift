import ATSPolicy
import EventLoop
import Foundation
import LogRecord
import TLSTestSupport
import Testing

@testable import ProxyCore

/// CONNECT sessions driven by scripted streams (``ScriptedStream``, ``Playbook``) and the test's
/// own clock (``ScriptedIdleWatch``, ``ScriptedStream/readLimitPasses()``): no socket, no probe, no
/// sleep. Each step is a byte or an end from one side, or an answer the test gives in the
/// proxy's place; what the session does in return is checked byte for byte. The same behaviours
/// are checked end to end, with real sockets and real servers, in the other suites.
@Suite("Tunnel sessions, scripted")
struct TunnelPlaybookTests {
    static let host = "api.example.com"
    static let connect = "CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n"
    static let upstreamAddress = try! SocketAddress(parsing: "203.0.113.7:443")

    /// A session whose CONNECT was allowed and whose upstream is connected: 200 sent, first bytes awaited.
    static func established(
        policyXML: String = "", mode: EnforcementMode = .enforce
    ) throws -> (ScriptedEnvironment, ClientSession, client: ScriptedStream, upstream: ScriptedStream) {
        let environment = try ScriptedEnvironment(policyXML: policyXML, mode: mode)
        let client = ScriptedStream("client", playbook: environment.playbook)
        let session = environment.startSession(client: client)
        client.peerSends(connect)
        environment.playbook.run()
        let verdict = try #require(environment.verdicts.first)
        #expect(verdict.key.host == host && verdict.key.port == 443)
        verdict.answer(ProbeResult(observed: compliantFacts(for: host), address: upstreamAddress))
        environment.playbook.run()
        let dial = try #require(environment.dials.first)
        #expect(dial.address?.description == "203.0.113.7:443", "the tunnel goes to the address the verdict judged")
        let upstream = ScriptedStream("upstream", playbook: environment.playbook)
        dial.connect(upstream, address: upstreamAddress)
        environment.playbook.run()
        #expect(client.deliveredText == "HTTP/1.1 200 Connection established\r\n\r\n")
        return (environment, session, client, upstream)
    }

    @Test("a slow verdict holds everything: no 200, no dial, and the device's early bytes wait for it")
    func slowVerdict() throws {
        let environment = try ScriptedEnvironment(policyXML: "")
        let client = ScriptedStream("client", playbook: environment.playbook)
        _ = environment.startSession(client: client)
        let hello = TestClientHello(serverName: Self.host).records()
        client.peerSends(Self.connect)
        client.peerSends(hello)  // Sent right behind the CONNECT, before any answer.
        environment.playbook.run()
        #expect(client.delivered.isEmpty)
        #expect(environment.dials.isEmpty)
        try #require(environment.verdicts.count == 1)
        environment.verdicts[0].answer(
            ProbeResult(observed: compliantFacts(for: Self.host), address: Self.upstreamAddress))
        environment.playbook.run()
        let upstream = ScriptedStream("upstream", playbook: environment.playbook)
        try #require(environment.dials.first).connect(upstream, address: Self.upstreamAddress)
        environment.playbook.run()
        #expect(client.deliveredText == "HTTP/1.1 200 Connection established\r\n\r\n")
        #expect(upstream.delivered == hello, "the held ClientHello goes up once the tunnel is judged")
    }

    @Test(
        "half-close: the device's FIN reaches the server only after its bytes; the answer still flows; the server's FIN ends it"
    )
    func halfCloseOrder() throws {
        let (environment, _, client, upstream) = try Self.established()
        let hello = TestClientHello(serverName: Self.host).records()
        upstream.takesEverything = false
        client.peerSends(hello + Array("request".utf8))
        client.peerEnds()
        environment.playbook.run()
        #expect(upstream.delivered.isEmpty)
        #expect(!upstream.sentEnd, "no FIN while the device's bytes wait for the server")
        upstream.peerTakes()
        environment.playbook.run()
        #expect(upstream.delivered == hello + Array("request".utf8))
        #expect(upstream.sentEnd, "the FIN follows the bytes")
        #expect(upstream.isOpen && client.isOpen, "the other direction is still open")
        upstream.peerSends("answer")
        upstream.peerEnds()
        environment.playbook.run()
        #expect(client.deliveredText.hasSuffix("answer"))
        #expect(!client.isOpen && !upstream.isOpen)
        #expect(environment.records.count == 1)
        #expect(environment.records.first?.action == .allowed)
        #expect(environment.records.first?.bytesUp == Int64(hello.count + 7))
        #expect(environment.records.first?.bytesDown == 6)
    }

    @Test(
        "a ClientHello naming another host: the upstream is given up, that name gets its own verdict, and a refusal sends it nothing"
    )
    func helloNamingAnotherServer() throws {
        let (environment, _, client, upstream) = try Self.established()
        client.peerSends(TestClientHello(serverName: "other.example.net").records())
        environment.playbook.run()
        #expect(!upstream.isOpen, "given up while the other name is probed")
        #expect(upstream.delivered.isEmpty)
        let second = try #require(environment.verdicts.count == 2 ? environment.verdicts[1] : nil)
        #expect(second.key.serverName == "other.example.net")
        // The certificate is for api.example.com only: a name mismatch, which ATS refuses.
        second.answer(ProbeResult(observed: compliantFacts(for: Self.host), address: Self.upstreamAddress))
        environment.playbook.run()
        #expect(environment.dials.count == 1, "no reconnect for a refused name")
        // The answer goes with a lingering close: logged, the client's side ended, what the client
        // still sends dropped until it closes too.
        let record = try #require(environment.records.first)
        #expect(client.sentEnd && client.isOpen)
        client.peerSends("more of what the device had to say")
        environment.playbook.run()
        #expect(client.isOpen)
        client.peerEnds()
        environment.playbook.run()
        #expect(!client.isOpen)
        #expect(environment.records.count == 1)
        #expect(record.action == .blocked)
        #expect(record.serverNameVerdict?.isCompliant == false)
        #expect(record.serverNameIndication == "other.example.net")
    }

    @Test("a lingering close ends at its read limit when the client neither closes nor sends")
    func lingeringEndsAtReadLimit() throws {
        let (environment, _, client, _) = try Self.established()
        client.peerSends(TestClientHello(serverName: "other.example.net").records())
        environment.playbook.run()
        let second = try #require(environment.verdicts.count == 2 ? environment.verdicts[1] : nil)
        second.answer(ProbeResult(observed: compliantFacts(for: Self.host), address: Self.upstreamAddress))
        environment.playbook.run()
        #expect(client.sentEnd && client.isOpen)
        #expect(client.readLimit == .seconds(2))
        #expect(client.readLimitPasses())
        environment.playbook.run()
        #expect(!client.isOpen)
    }

    @Test("the same with a name the certificate covers: reconnected to the address that probe judged, and relayed")
    func helloNamingAnotherServerAllowed() throws {
        let (environment, _, client, _) = try Self.established()
        let hello = TestClientHello(serverName: "other.example.net").records()
        client.peerSends(hello)
        environment.playbook.run()
        let verdict = try #require(environment.verdicts.count == 2 ? environment.verdicts[1] : nil)
        try Self.expectReconnect(
            environment, answering: verdict, factsFor: "other.example.net", address: "198.51.100.9:443", held: hello)
    }

    /// Answers `verdict` as compliant for `host` at `address`, then checks the tunnel opens a second
    /// upstream to that address and hands it the `held` ClientHello.
    static func expectReconnect(
        _ environment: ScriptedEnvironment, answering verdict: ScriptedEnvironment.VerdictRequest,
        factsFor host: String,
        address: String, held hello: [UInt8]
    ) throws {
        let judged = try SocketAddress(parsing: address)
        verdict.answer(ProbeResult(observed: compliantFacts(for: host), address: judged))
        environment.playbook.run()
        let reconnect = try #require(environment.dials.count == 2 ? environment.dials[1] : nil)
        #expect(reconnect.address?.description == address, "the address that probe judged")
        let second = ScriptedStream("second upstream", playbook: environment.playbook)
        reconnect.connect(second, address: judged)
        environment.playbook.run()
        #expect(second.delivered == hello)
    }

    @Test("backpressure: a device that stops reading stops the server being read, and draining resumes it")
    func backpressureWhileDraining() throws {
        let (environment, _, client, upstream) = try Self.established()
        client.peerSends(TestClientHello(serverName: Self.host).records())
        environment.playbook.run()
        client.takesEverything = false
        let chunk = [UInt8](repeating: 0x17, count: 256 * 1024)
        for _ in 0..<3 { upstream.peerSends(chunk) }
        environment.playbook.run()
        #expect(!upstream.isReading, "over the high-water mark, the server is not read")
        let waiting = client.pendingOutputBytes
        upstream.peerSends(chunk)  // Stays in the kernel: nobody reads it.
        environment.playbook.run()
        #expect(client.pendingOutputBytes == waiting, "memory does not grow while the device does not read")
        client.peerTakes(waiting - Backpressure.highWater / 2 - 1)
        environment.playbook.run()
        #expect(!upstream.isReading, "still above half the mark")
        client.peerTakes()
        environment.playbook.run()
        #expect(upstream.isReading)
        client.peerTakes()
        #expect(client.delivered.count == "HTTP/1.1 200 Connection established\r\n\r\n".utf8.count + 4 * chunk.count)
    }

    @Test("cleartext in a tunnel to a host that requires TLS: Apple's cleartext error, and the server gets nothing")
    func cleartextInTunnel() throws {
        let (environment, _, client, upstream) = try Self.established()
        client.peerSends("GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n")
        environment.playbook.run()
        #expect(upstream.delivered.isEmpty)
        #expect(client.deliveredText.contains("403"), "\(client.deliveredText)")
        let record = try #require(environment.records.first)
        #expect(record.action == .blocked)
        #expect(record.tunnelProtocol == .cleartext)
        #expect(record.verdict?.violations.map(\.kind.name) == ["cleartext"])
    }

    /// A session for a host that accepts cleartext: its tunnel opens before any verdict.
    static func openedBeforeVerdict(
        policyXML: String
    ) throws -> (ScriptedEnvironment, client: ScriptedStream, upstream: ScriptedStream) {
        let environment = try ScriptedEnvironment(policyXML: policyXML)
        let client = ScriptedStream("client", playbook: environment.playbook)
        _ = environment.startSession(client: client)
        client.peerSends(connect)
        environment.playbook.run()
        #expect(environment.verdicts.isEmpty, "no verdict before a side speaks")
        let dial = try #require(environment.dials.first)
        #expect(dial.address == nil, "by name: no probe chose an address")
        let upstream = ScriptedStream("upstream", playbook: environment.playbook)
        dial.connect(upstream, address: upstreamAddress)
        environment.playbook.run()
        #expect(client.deliveredText == "HTTP/1.1 200 Connection established\r\n\r\n")
        return (environment, client, upstream)
    }

    static let arbitraryLoads = "<key>NSAllowsArbitraryLoads</key><true/>"

    @Test("where cleartext is allowed, a server that speaks first is judged by the cleartext rule at once and relayed")
    func serverSpeaksFirst() throws {
        let (environment, client, upstream) = try Self.openedBeforeVerdict(policyXML: Self.arbitraryLoads)
        upstream.peerSends("220 smtp.example.com ESMTP\r\n")
        environment.playbook.run()
        #expect(client.deliveredText.hasSuffix("220 smtp.example.com ESMTP\r\n"))
        client.peerSends("EHLO device\r\n")
        environment.playbook.run()
        #expect(upstream.deliveredText == "EHLO device\r\n")
        client.peerEnds()
        upstream.peerEnds()
        environment.playbook.run()
        let record = try #require(environment.records.first)
        #expect(record.tunnelProtocol == .cleartext)
        #expect(record.action == .allowed)
        #expect(record.verdict?.isCompliant == true)
    }

    @Test("where it is not, a server that speaks first is not read until the device's bytes are judged")
    func serverSpeaksFirstToTLSOnlyHost() throws {
        let (environment, _, client, upstream) = try Self.established()
        #expect(!upstream.isReading, "a firehose would otherwise fill the proxy's memory")
        upstream.peerSends("220 smtp.example.com ESMTP\r\n")
        environment.playbook.run()
        #expect(client.deliveredText == "HTTP/1.1 200 Connection established\r\n\r\n", "nothing of the banner")
    }

    @Test(
        "a ClientHello through a tunnel opened before any verdict: the upstream is given up, the verdict taken, then the judged address"
    )
    func deferredVerdict() throws {
        let (environment, client, upstream) = try Self.openedBeforeVerdict(policyXML: Self.arbitraryLoads)
        let hello = TestClientHello(serverName: Self.host).records()
        client.peerSends(hello)
        environment.playbook.run()
        #expect(!upstream.isOpen && upstream.delivered.isEmpty)
        let verdict = try #require(environment.verdicts.first)
        #expect(verdict.key.host == Self.host && verdict.key.serverName == nil)
        try Self.expectReconnect(
            environment, answering: verdict, factsFor: Self.host, address: "203.0.113.8:443", held: hello)
    }

    @Test(
        "the same refused (a certificate for another host, which arbitrary loads do not excuse): a fatal handshake_failure alert"
    )
    func deferredVerdictRefused() throws {
        let (env, client, _) = try Self.openedBeforeVerdict(policyXML: Self.arbitraryLoads)
        client.peerSends(TestClientHello(serverName: Self.host).records())
        env.playbook.run()
        // The certificate names another host: a trust failure ATS refuses even with arbitrary loads.
        try #require(env.verdicts.first).answer(
            ProbeResult(observed: compliantFacts(for: "elsewhere.example.org"), address: Self.upstreamAddress))
        env.playbook.run()
        #expect(env.dials.count == 1, "no reconnect")
        #expect(client.delivered.suffix(7) == [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 40])
        let record = try #require(env.records.first)
        #expect(record.action == .blocked)
        #expect(record.verdict?.isCompliant == false)
    }

    // MARK: - Time limits, on the test's clock

    @Test("a relaying tunnel where nothing moves is closed at the idle timeout, both sides, and the line says why")
    func idleTunnel() throws {
        let (environment, _, client, upstream) = try Self.established()
        client.peerSends(TestClientHello(serverName: Self.host).records())
        environment.playbook.run()
        let watch = try #require(environment.idleWatches.last)
        #expect(watch.isWatching && watch.watched.count == 2, "both sides watched")
        watch.comeDue()
        environment.playbook.run()
        #expect(!client.isOpen && !upstream.isOpen)
        #expect(environment.records.first?.upstreamError == "closed: idle for 300 s, no byte moved either way")
    }

    @Test("a reader that takes none of the bytes waiting for it is stalled, not idle, and the line says so")
    func stalledReader() throws {
        let (environment, _, client, upstream) = try Self.established()
        client.peerSends(TestClientHello(serverName: Self.host).records())
        environment.playbook.run()
        client.takesEverything = false
        upstream.peerSends([UInt8](repeating: 0x17, count: 1000))
        environment.playbook.run()
        try #require(environment.idleWatches.last).comeDue()
        environment.playbook.run()
        #expect(!client.isOpen && !upstream.isOpen)
        #expect(
            environment.records.first?.upstreamError == "closed: bytes waited 300 s for a reader that took none of them"
        )
    }

    @Test("half a ClientHello at the first-bytes deadline is unreadable: a decode_error alert, and nothing upstream")
    func helloNotCompleteInTime() throws {
        let (environment, _, client, upstream) = try Self.established()
        client.peerSends(Array(TestClientHello(serverName: Self.host).records().prefix(40)))
        environment.playbook.run()
        #expect(client.readLimitPasses(), "the tunnel's first bytes have a deadline")
        environment.playbook.run()
        #expect(client.delivered.suffix(7) == [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 50])
        #expect(upstream.delivered.isEmpty)
        let record = try #require(environment.records.first)
        #expect(record.action == .blocked)
        #expect(record.helloUnreadable == "the ClientHello was not complete within 10 s")
    }

    // MARK: - Found in review

    @Test(
        "a server that ends before a tunnel's first bytes are judged: its end waits, and the reconnected server is read"
    )
    func serverEndsBeforeJudgement() throws {
        let (environment, client, upstream) = try Self.openedBeforeVerdict(policyXML: Self.arbitraryLoads)
        upstream.peerEnds()
        environment.playbook.run()
        #expect(!client.sentEnd, "the server's end went to the device before anything was judged")
        let hello = TestClientHello(serverName: Self.host).records()
        client.peerSends(hello)
        environment.playbook.run()
        try #require(environment.verdicts.first)
            .answer(ProbeResult(observed: compliantFacts(for: Self.host), address: Self.upstreamAddress))
        environment.playbook.run()
        let second = ScriptedStream("second upstream", playbook: environment.playbook)
        try #require(environment.dials.count == 2 ? environment.dials[1] : nil).connect(
            second, address: Self.upstreamAddress)
        environment.playbook.run()
        #expect(second.delivered == hello)
        second.peerSends("server hello")
        environment.playbook.run()
        #expect(
            client.deliveredText.hasSuffix("server hello"), "the new connection is read: the old one's end is forgotten"
        )
    }

    @Test("a refusal from a probe run for another client is retried with this client's rules, after the 200 too")
    func othersRefusalRetried() throws {
        let (environment, client, _) = try Self.openedBeforeVerdict(policyXML: Self.arbitraryLoads)
        client.peerSends(TestClientHello(serverName: Self.host).records())
        environment.playbook.run()
        // A LAN client's probe was refused 127.0.0.1, which this loopback client may reach.
        let refusal = DestinationRefusal.local(
            .loopback, .init(address: try #require(IPAddress("127.0.0.1")), port: 443))
        try #require(environment.verdicts.first).answer(ProbeResult(refusal: refusal, host: Self.host, port: 443))
        environment.playbook.run()
        #expect(environment.verdicts.count == 2, "looked up again with this client's rules")
        #expect(client.isOpen)
        #expect(environment.records.isEmpty)
    }
}
