import ATSPolicy
import EventLoop
import Foundation
import LogRecord
import TLSInspection
import TLSTestSupport
import Testing

@testable import ProxyCore

/// The tunnel's own upstream connection, opened while its CONNECT's probe runs (``EarlyUpstream``),
/// scripted: the probe's progress, the dials, the verdict and the escape timer are all the test's.
@Suite("Early upstream connection, scripted")
struct EarlyUpstreamPlaybookTests {
    static let host = TunnelPlaybookTests.host
    static let address = TunnelPlaybookTests.upstreamAddress
    static let other = try! SocketAddress(parsing: "203.0.113.8:443")

    /// A CONNECT whose probe has issued its connect to `address`: the tunnel's own dial has started.
    static func probing(
        mode: EnforcementMode = .enforce, start: TunnelStart = .atVerdict
    ) throws -> (ScriptedEnvironment, ClientSession, ScriptedStream, ScriptedEnvironment.VerdictRequest) {
        let environment = try ScriptedEnvironment(policyXML: "", mode: mode)
        environment.settings.tunnelStart = start
        let client = ScriptedStream("client", playbook: environment.playbook)
        let session = environment.startSession(client: client)
        client.peerSends(TunnelPlaybookTests.connect)
        environment.playbook.run()
        let verdict = try #require(environment.verdicts.first)
        #expect(environment.dials.isEmpty, "nothing is dialled before the probe says where it connects")
        verdict.progressed(.connecting(address))
        environment.playbook.run()
        #expect(environment.dials.count == 1)
        #expect(environment.dials.first?.address?.description == address.description)
        return (environment, session, client, verdict)
    }

    /// An allowing verdict about `address` comes to a tunnel without a connection to it: the tunnel
    /// dials `address` (its second dial), which the test connects.
    static func redialled(
        _ environment: ScriptedEnvironment, after verdict: ScriptedEnvironment.VerdictRequest, to address: SocketAddress
    ) throws -> ScriptedStream {
        verdict.answer(ProbeResult(observed: compliantFacts(for: host), address: address))
        environment.playbook.run()
        let dial = try #require(environment.dials.count == 2 ? environment.dials[1] : nil)
        #expect(dial.address?.description == address.description, "the tunnel goes to the address the verdict judged")
        let stream = ScriptedStream("again", playbook: environment.playbook)
        dial.connect(stream, address: address)
        environment.playbook.run()
        return stream
    }

    @Test("opened alongside the probe: an allowing verdict gets its 200 at once, through that connection")
    func allowed() throws {
        let (environment, _, client, verdict) = try Self.probing()
        let upstream = ScriptedStream("upstream", playbook: environment.playbook)
        environment.dials[0].connect(upstream, address: Self.address)
        environment.playbook.run()
        #expect(client.delivered.isEmpty, "no 200 before the verdict")
        verdict.answer(ProbeResult(observed: compliantFacts(for: Self.host), address: Self.address))
        environment.playbook.run()
        #expect(client.deliveredText == "HTTP/1.1 200 Connection established\r\n\r\n")
        #expect(environment.dials.count == 1, "no second dial")
        let hello = TestClientHello(serverName: Self.host).records()
        client.peerSends(hello)
        environment.playbook.run()
        #expect(upstream.delivered == hello)
    }

    @Test("a blocking verdict: 403, and the early connection closed without a byte")
    func blocked() throws {
        let (environment, _, client, verdict) = try Self.probing()
        let upstream = ScriptedStream("upstream", playbook: environment.playbook)
        environment.dials[0].connect(upstream, address: Self.address)
        environment.playbook.run()
        // The certificate names another host: ATS refuses it.
        verdict.answer(ProbeResult(observed: compliantFacts(for: "elsewhere.example.org"), address: Self.address))
        environment.playbook.run()
        #expect(client.deliveredText.hasPrefix("HTTP/1.1 403"), "\(client.deliveredText)")
        #expect(!upstream.isOpen && upstream.delivered.isEmpty)
        #expect(environment.dials.count == 1)
    }

    @Test("a verdict about another address: the early connection is closed and the judged address dialled")
    func otherAddress() throws {
        let (environment, _, client, verdict) = try Self.probing()
        let early = ScriptedStream("early", playbook: environment.playbook)
        environment.dials[0].connect(early, address: Self.address)
        environment.playbook.run()
        verdict.answer(ProbeResult(observed: compliantFacts(for: Self.host), address: Self.other))
        environment.playbook.run()
        #expect(!early.isOpen)
        let dial = try #require(environment.dials.count == 2 ? environment.dials[1] : nil)
        #expect(dial.address?.description == Self.other.description)
        dial.connect(ScriptedStream("upstream", playbook: environment.playbook), address: Self.other)
        environment.playbook.run()
        #expect(client.deliveredText == "HTTP/1.1 200 Connection established\r\n\r\n")
    }

    @Test(
        "a late verdict: the open connection is given up when its escape timer fires, and the tunnel dials after the verdict"
    )
    func escapes() throws {
        let (environment, _, client, verdict) = try Self.probing()
        let early = ScriptedStream("early", playbook: environment.playbook)
        environment.dials[0].connect(early, address: Self.address)
        environment.playbook.run()
        let escape = try #require(environment.timers.last)
        #expect(escape.armed != nil, "the wait for the verdict is bounded")
        escape.comeDue()
        environment.playbook.run()
        #expect(!early.isOpen, "a server that serves one connection at a time can now answer the probe")
        #expect(client.delivered.isEmpty)
        verdict.answer(ProbeResult(observed: compliantFacts(for: Self.host), address: Self.address))
        environment.playbook.run()
        let dial = try #require(environment.dials.count == 2 ? environment.dials[1] : nil)
        #expect(dial.address?.description == Self.address.description)
        dial.connect(ScriptedStream("upstream", playbook: environment.playbook), address: Self.address)
        environment.playbook.run()
        #expect(client.deliveredText == "HTTP/1.1 200 Connection established\r\n\r\n")
    }

    @Test("a verdict in time disarms the escape timer")
    func escapeDisarmed() throws {
        let (environment, _, _, verdict) = try Self.probing()
        let early = ScriptedStream("early", playbook: environment.playbook)
        environment.dials[0].connect(early, address: Self.address)
        environment.playbook.run()
        verdict.answer(ProbeResult(observed: compliantFacts(for: Self.host), address: Self.address))
        environment.playbook.run()
        #expect(environment.timers.last?.armed == nil)
        environment.timers.last?.comeDue()
        environment.playbook.run()
        #expect(early.isOpen, "the tunnel's connection is not touched by a disarmed timer")
    }

    @Test("the probe connects again for its permissive handshake: the early connection goes first")
    func explaining() throws {
        let (environment, _, client, verdict) = try Self.probing(mode: .report)
        let early = ScriptedStream("early", playbook: environment.playbook)
        environment.dials[0].connect(early, address: Self.address)
        environment.playbook.run()
        verdict.progressed(.explaining)
        environment.playbook.run()
        #expect(!early.isOpen)
        verdict.answer(ProbeResult(observed: compliantFacts(for: Self.host), address: Self.address))
        environment.playbook.run()
        #expect(environment.dials.count == 2, "dialled again after the verdict")
        environment.dials[1].connect(ScriptedStream("upstream", playbook: environment.playbook), address: Self.address)
        environment.playbook.run()
        #expect(client.deliveredText == "HTTP/1.1 200 Connection established\r\n\r\n")
    }

    @Test(
        "the escape delay: twice the connect, and 250 ms",
        arguments: [(0, 250), (25, 300), (-3, 250)])
    func escapeDelay(connect: Int64, milliseconds: Int64) {
        #expect(EarlyUpstream.escapeDelay(connectTook: connect) == .milliseconds(milliseconds))
    }

    // MARK: - --tunnel-start connect

    static let established = "HTTP/1.1 200 Connection established\r\n\r\n"
    static let serverFlight: [UInt8] = [22, 3, 3, 0, 4, 2, 0, 0, 0]

    /// At connect: the early connection opened (200 sent) and the device's hello went ahead.
    static func helloAhead(
        mode: EnforcementMode = .enforce
    ) throws -> (
        ScriptedEnvironment, ScriptedStream, ScriptedEnvironment.VerdictRequest, upstream: ScriptedStream,
        hello: [UInt8]
    ) {
        let (environment, _, client, verdict) = try probing(mode: mode, start: .atConnect)
        let upstream = ScriptedStream("early", playbook: environment.playbook)
        environment.dials[0].connect(upstream, address: address)
        environment.playbook.run()
        #expect(client.deliveredText == established, "the 200 goes when the tunnel's connection opens")
        let hello = TestClientHello(serverName: host).records()
        client.peerSends(hello)
        environment.playbook.run()
        #expect(upstream.delivered == hello, "the hello goes to the server while the probe runs")
        return (environment, client, verdict, upstream, hello)
    }

    @Test("at connect: the server's answer waits for the verdict, then flows, on the same connection")
    func atConnectAllowed() throws {
        let (environment, client, verdict, upstream, hello) = try Self.helloAhead()
        upstream.peerSends(Self.serverFlight)
        environment.playbook.run()
        #expect(client.deliveredText == Self.established, "nothing of the server's before the verdict")
        verdict.answer(ProbeResult(observed: compliantFacts(for: Self.host), address: Self.address))
        environment.playbook.run()
        #expect(client.delivered == Array(Self.established.utf8) + Self.serverFlight)
        #expect(environment.dials.count == 1)
        client.peerSends("finished")
        environment.playbook.run()
        #expect(upstream.delivered == hello + Array("finished".utf8), "the hello is not sent twice")
        client.peerEnds()
        upstream.peerEnds()
        environment.playbook.run()
        let record = try #require(environment.records.first)
        #expect(record.action == .allowed)
        #expect(record.bytesUp == Int64(hello.count + 8))
        #expect(record.bytesDown == Int64(Self.serverFlight.count))
    }

    @Test("at connect: a blocking verdict fails the device's handshake, and the server's answer never reaches it")
    func atConnectBlocked() throws {
        let (environment, client, verdict, upstream, _) = try Self.helloAhead()
        upstream.peerSends(Self.serverFlight)
        environment.playbook.run()
        verdict.answer(ProbeResult(observed: compliantFacts(for: "elsewhere.example.org"), address: Self.address))
        environment.playbook.run()
        #expect(client.delivered == Array(Self.established.utf8) + [21, 3, 3, 0, 2, 2, 40])
        #expect(!upstream.isOpen)
        #expect(environment.records.first?.action == .blocked)
        #expect(environment.records.first?.verdict?.isCompliant == false)
    }

    @Test("at connect: a late verdict gives the held connection up; the hello goes again on a new one after it")
    func atConnectEscapes() throws {
        let (environment, client, verdict, upstream, hello) = try Self.helloAhead()
        #expect(environment.timers.isEmpty || environment.timers.last?.armed == nil, "no escape before an answer")
        upstream.peerSends(Self.serverFlight)
        environment.playbook.run()
        let escape = try #require(environment.timers.last)
        #expect(escape.armed != nil)
        escape.comeDue()
        environment.playbook.run()
        #expect(!upstream.isOpen)
        let again = try Self.redialled(environment, after: verdict, to: Self.address)
        #expect(again.delivered == hello)
        again.peerSends(Self.serverFlight)
        environment.playbook.run()
        #expect(
            client.delivered == Array(Self.established.utf8) + Self.serverFlight, "the first answer was never relayed")
    }

    @Test("at connect: a verdict about another address closes the held connection and sends the hello there")
    func atConnectOtherAddress() throws {
        let (environment, _, verdict, upstream, hello) = try Self.helloAhead()
        verdict.answer(ProbeResult(observed: compliantFacts(for: Self.host), address: Self.other))
        environment.playbook.run()
        #expect(!upstream.isOpen)
        let dial = try #require(environment.dials.count == 2 ? environment.dials[1] : nil)
        #expect(dial.address?.description == Self.other.description)
        let again = ScriptedStream("again", playbook: environment.playbook)
        dial.connect(again, address: Self.other)
        environment.playbook.run()
        #expect(again.delivered == hello)
    }

    @Test("at connect: a verdict that comes before the hello judges it when it comes, on the same connection")
    func atConnectVerdictFirst() throws {
        let (environment, _, client, verdict) = try Self.probing(start: .atConnect)
        let upstream = ScriptedStream("early", playbook: environment.playbook)
        environment.dials[0].connect(upstream, address: Self.address)
        environment.playbook.run()
        verdict.answer(ProbeResult(observed: compliantFacts(for: Self.host), address: Self.address))
        environment.playbook.run()
        let hello = TestClientHello(serverName: Self.host).records()
        client.peerSends(hello)
        environment.playbook.run()
        #expect(upstream.delivered == hello)
        upstream.peerSends(Self.serverFlight)
        environment.playbook.run()
        #expect(client.delivered == Array(Self.established.utf8) + Self.serverFlight)
        #expect(environment.dials.count == 1)
    }

    @Test("at connect: a verdict known before the connection opens still gets its 403 at the CONNECT")
    func atConnectVerdictBeforeOpen() throws {
        let (environment, _, client, verdict) = try Self.probing(start: .atConnect)
        verdict.answer(ProbeResult(observed: compliantFacts(for: "elsewhere.example.org"), address: Self.address))
        environment.playbook.run()
        #expect(client.deliveredText.hasPrefix("HTTP/1.1 403"), "\(client.deliveredText)")
    }

    // MARK: - The probe's answer

    @Test("the server answered the probe: the early connection is kept however late the verdict")
    func answeredProbeKeepsEarly() throws {
        let (environment, _, client, verdict) = try Self.probing()
        let early = ScriptedStream("early", playbook: environment.playbook)
        environment.dials[0].connect(early, address: Self.address)
        environment.playbook.run()
        verdict.progressed(.answered)
        environment.playbook.run()
        environment.timers.last?.comeDue()
        environment.playbook.run()
        #expect(early.isOpen, "a server answering the probe is not waiting on the early connection")
        verdict.answer(ProbeResult(observed: compliantFacts(for: Self.host), address: Self.address))
        environment.playbook.run()
        #expect(client.deliveredText == Self.established)
        #expect(environment.dials.count == 1)
    }

    @Test("at connect: with the probe answered, a late verdict does not give the held answer up")
    func atConnectAnsweredProbe() throws {
        let (environment, client, verdict, upstream, _) = try Self.helloAhead()
        verdict.progressed(.answered)
        upstream.peerSends(Self.serverFlight)
        environment.playbook.run()
        environment.timers.last?.comeDue()
        environment.playbook.run()
        #expect(upstream.isOpen)
        verdict.answer(ProbeResult(observed: compliantFacts(for: Self.host), address: Self.address))
        environment.playbook.run()
        #expect(client.delivered == Array(Self.established.utf8) + Self.serverFlight)
        #expect(environment.dials.count == 1)
    }

    @Test("at connect: the probe connecting again for its permissive handshake gives the held connection up first")
    func atConnectExplaining() throws {
        let (environment, _, verdict, upstream, hello) = try Self.helloAhead(mode: .report)
        verdict.progressed(.answered)
        verdict.progressed(.explaining)
        environment.playbook.run()
        #expect(!upstream.isOpen)
        let again = try Self.redialled(environment, after: verdict, to: Self.address)
        #expect(again.delivered == hello)
    }

    // MARK: - Connect mode, before the device speaks

    /// At connect: the early connection opened, the 200 sent, the device silent so far.
    static func openedSilent(
        mode: EnforcementMode = .enforce
    ) throws -> (ScriptedEnvironment, ScriptedStream, ScriptedEnvironment.VerdictRequest, early: ScriptedStream) {
        let (environment, _, client, verdict) = try probing(mode: mode, start: .atConnect)
        let early = ScriptedStream("early", playbook: environment.playbook)
        environment.dials[0].connect(early, address: address)
        environment.playbook.run()
        #expect(client.deliveredText == established)
        return (environment, client, verdict, early)
    }

    @Test(
        "at connect: a silent device's early connection is given up at its escape; the hello goes to a new one after the verdict"
    )
    func silentDeviceEscapes() throws {
        let (environment, client, verdict, early) = try Self.openedSilent()
        let escape = try #require(environment.timers.last)
        #expect(escape.armed != nil, "bounded while the device is silent too")
        escape.comeDue()
        environment.playbook.run()
        #expect(!early.isOpen)
        let hello = TestClientHello(serverName: Self.host).records()
        client.peerSends(hello)  // Waits, unread, for the verdict.
        environment.playbook.run()
        let again = try Self.redialled(environment, after: verdict, to: Self.address)
        #expect(again.delivered == hello)
        again.peerSends(Self.serverFlight)
        environment.playbook.run()
        #expect(client.delivered == Array(Self.established.utf8) + Self.serverFlight)
    }

    @Test("at connect: the permissive probe's connect gives a silent device's early connection up first")
    func silentDeviceExplaining() throws {
        let (environment, _, verdict, early) = try Self.openedSilent(mode: .report)
        verdict.progressed(.explaining)
        environment.playbook.run()
        #expect(!early.isOpen)
    }

    @Test(
        "at connect: the server ends the connection that carried the hello without a word: the hello goes again after the verdict"
    )
    func endedWithoutAnswer() throws {
        let (environment, client, verdict, upstream, hello) = try Self.helloAhead()
        upstream.peerEnds()
        environment.playbook.run()
        #expect(!upstream.isOpen)
        let again = try Self.redialled(environment, after: verdict, to: Self.address)
        #expect(again.delivered == hello, "the hello goes to the new connection")
        again.peerSends(Self.serverFlight)
        environment.playbook.run()
        #expect(client.delivered == Array(Self.established.utf8) + Self.serverFlight, "no end passed on before it")
    }

    @Test(
        "at connect, report mode: a server that speaks first is acted on when the verdict comes, not when the device speaks"
    )
    func serverSpeaksFirst() throws {
        let (environment, client, verdict, early) = try Self.openedSilent(mode: .report)
        verdict.answer(ProbeResult(cleartextUpstream: "SSH-2.0-OpenSSH_9.6", address: Self.address))
        environment.playbook.run()
        #expect(!early.isOpen, "the early connection, read by no one, is replaced")
        let dial = try #require(environment.dials.count == 2 ? environment.dials[1] : nil)
        let again = ScriptedStream("again", playbook: environment.playbook)
        dial.connect(again, address: Self.address)
        environment.playbook.run()
        again.peerSends("SSH-2.0-OpenSSH_9.6\r\n")
        environment.playbook.run()
        #expect(client.deliveredText == Self.established + "SSH-2.0-OpenSSH_9.6\r\n")
    }

    @Test("at connect: a verdict that reached no server ends the tunnel at once, with its failure")
    func unreachableBeforeHello() throws {
        let (environment, client, verdict, early) = try Self.openedSilent()
        verdict.answer(ProbeResult(upstreamFailure: .deadline(reason: "no answer")))
        environment.playbook.run()
        #expect(!early.isOpen && !client.isOpen)
        let record = try #require(environment.records.first)
        #expect(record.action == .failed)
        #expect(record.upstreamError != nil)
    }
}
