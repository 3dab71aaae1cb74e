import ATSPolicy
import COpenSSL
import EventLoop
import Foundation
import LogRecord
import TLSInspection
import TLSTestSupport
import Testing
import TrafficReport

@testable import ProxyCore

/// Intercept-mode sessions driven by scripted streams and the test's own clock (``InterceptRig``):
/// no socket, no process, no sleep. The device and the origin are real OpenSSL endpoints over
/// memory, so every handshake, alert and record is OpenSSL's; the proxy's side is the session as
/// the daemon runs it. The same paths are checked end to end, with real sockets, curl and nginx, in
/// the daemon's Intercept suites.
@Suite("Intercept sessions, scripted")
struct InterceptPlaybookTests {
    static let request = "GET /v1/items HTTP/1.1\r\nHost: api.example.com\r\n\r\n"
    static let response = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nitems"
    static let forwardedRequest = viaProxy(request)
    static let forwardedResponse = viaProxy(response)

    /// `message` as the proxy relays it: its head gains the proxy's `Via` (RFC 9110 §7.6.3).
    static func viaProxy(_ message: String) -> String {
        message.replacingOccurrences(of: "\r\n\r\n", with: "\r\nVia: 1.1 atsproxy\r\n\r\n")
    }

    /// The device's request reaches the origin, and the origin's answer the device, each as the
    /// proxy relays it.
    static func oneRequest(_ rig: InterceptRig, _ device: MemoryTLSPeer, _ origin: MemoryTLSPeer) {
        device.send(request)
        rig.settle()
        #expect(origin.take() == forwardedRequest, "the request reaches the origin as the device sent it")
        origin.send(response)
        rig.settle()
        #expect(device.take() == forwardedResponse)
    }

    @Test("a request through an intercepted tunnel: a minted leaf for the device, one request line, one tunnel line")
    func interceptedRequest() throws {
        let rig = try InterceptRig()
        let (client, _, device, origin) = try rig.intercepted()
        #expect(device.peerSubject?.contains("CN=\(InterceptRig.host)") == true, "the leaf is minted for the name")
        Self.oneRequest(rig, device, origin)
        let line = try #require(rig.environment.requests.first)
        #expect(line.status == 200 && line.method == "GET")
        #expect(line.url == "https://api.example.com/v1/items")
        #expect(rig.environment.records.isEmpty, "the tunnel is logged when it ends")
        device.closeNotify()
        client.peerEnds()
        rig.settle()
        let record = try #require(rig.record)
        #expect(record.action == .allowed && record.inspect == .intercept)
        #expect(record.verdict?.isCompliant == true)
        #expect(record.failure == nil)
    }

    @Test("a device that does not trust the proxy's CA: unknown_ca is its refusal, counted for that device only")
    func deviceRejectsLeaf() throws {
        let rig = try InterceptRig()
        let limit = rig.environment.settings.intercept.rejectionsBeforePassthrough
        for attempt in 1...limit {
            let (client, upstream) = try rig.connected(from: "192.0.2.10")
            let device = try rig.device(on: client, trusting: rig.certificates.path("origin-root.pem"))
            let origin = try rig.origin(on: upstream)
            rig.settle()
            guard case .failed(let reason) = device.handshake else {
                Issue.record("attempt \(attempt): the device accepted a leaf from a CA it does not trust")
                return
            }
            #expect(reason.contains("certificate verify failed"))
            #expect(origin.received.isEmpty, "no request went upstream")
            let record = try #require(rig.environment.records.last)
            #expect(record.failure == .clientRejectedCertificate && record.clientAlert == "unknown_ca")
            #expect(record.upstreamError?.contains("passed through for 192.0.2.10") == (attempt == limit))
        }
        // That device's next CONNECT to the host is passed through: judged by a probe, not dialed.
        let passed = ScriptedStream("client", playbook: rig.environment.playbook)
        _ = rig.environment.startSession(client: passed, address: "192.0.2.10")
        passed.peerSends(InterceptRig.connect)
        rig.settle()
        #expect(rig.environment.verdicts.count == 1, "the passed-through host's CONNECT waits for a probe's verdict")
        #expect(rig.environment.dials.count == limit)
        // Another device's is still intercepted.
        _ = try rig.connected(from: "192.0.2.11")
        #expect(rig.environment.dials.count == limit + 1)
    }

    @Test("a device that offers TLS 1.0 only: a version failure, not a refusal of the certificate, and never counted")
    func tls10Device() throws {
        let rig = try InterceptRig()
        let limit = rig.environment.settings.intercept.rejectionsBeforePassthrough
        for _ in 0...limit {
            let (client, upstream) = try rig.connected()
            let device = try rig.device(
                on: client, versions: TLS1_VERSION...TLS1_VERSION, ciphers: "DEFAULT:@SECLEVEL=0")
            _ = try rig.origin(on: upstream)
            rig.settle()
            #expect(device.handshake != .complete)
            let record = try #require(rig.environment.records.last)
            #expect(record.failure == .clientTLSVersion, "\(String(describing: record.upstreamError))")
            #expect(record.upstreamError?.contains("no TLS version the proxy accepts") == true)
        }
        #expect(rig.environment.verdicts.isEmpty, "still intercepted after more failures than the limit")
    }

    @Test(
        "an origin that refuses the ATS handshake (TLS 1.0 only), enforce mode: the probe explains, the device gets an alert"
    )
    func refusedUpstreamEnforce() throws {
        let rig = try InterceptRig()
        let (client, upstream) = try rig.connected()
        let device = try rig.device(on: client)
        let origin = try rig.origin(on: upstream, versions: TLS1_VERSION...TLS1_VERSION)
        rig.settle()
        #expect(origin.handshake != .complete)
        let probe = try #require(rig.environment.verdicts.first, "no facts to judge: the probes are asked")
        probe.answer(
            ProbeResult(
                observed: tls10Facts(), atsHandshakeFailure: HandshakeFailure(reason: "unsupported protocol"),
                address: InterceptRig.upstreamAddress))
        rig.settle()
        guard case .failed(let reason) = device.handshake else {
            Issue.record("the device's handshake went on: \(device.handshake)")
            return
        }
        #expect(reason.contains("handshake failure"), "the alert an iPhone app's own handshake would end with")
        let record = try #require(rig.record)
        #expect(record.action == .blocked)
        #expect(record.verdict?.isCompliant == false)
        #expect(rig.environment.requests.isEmpty)
    }

    @Test(
        "an origin that refuses the ATS handshake, report mode: intercepted through a permissive handshake, requests logged"
    )
    func refusedUpstreamReport() throws {
        let rig = try InterceptRig(mode: .report)
        let (client, upstream) = try rig.connected()
        let device = try rig.device(on: client)
        _ = try rig.origin(on: upstream, versions: TLS1_VERSION...TLS1_VERSION)
        rig.settle()
        #expect(!upstream.isOpen, "the refused connection is closed")
        #expect(rig.environment.verdicts.isEmpty, "report mode makes the permissive handshake itself")
        let redial = try #require(rig.environment.dials.count == 2 ? rig.environment.dials[1] : nil)
        #expect(
            redial.address?.description == InterceptRig.upstreamAddress.description,
            "to the address the refused handshake went to")
        let second = ScriptedStream("upstream-permissive", playbook: rig.environment.playbook)
        let origin = try rig.origin(on: second, versions: TLS1_VERSION...TLS1_VERSION)
        redial.connect(second, address: InterceptRig.upstreamAddress)
        rig.settle()
        #expect(origin.handshake == .complete && origin.version == "TLSv1")
        #expect(device.handshake == .complete)
        Self.oneRequest(rig, device, origin)
        #expect(rig.environment.requests.count == 1)
        device.closeNotify()
        client.peerEnds()
        rig.settle()
        let record = try #require(rig.record)
        #expect(record.action == .allowed && record.inspect == .intercept)
        #expect(record.verdict?.isCompliant == false, "the verdict keeps the ATS handshake's refusal")
    }

    @Test("WebSocket: the 101 hands the connection over, and frames flow both ways unread")
    func webSocket() throws {
        let rig = try InterceptRig()
        let (client, upstream, device, origin) = try rig.intercepted()
        let upgrade =
            "GET /chat HTTP/1.1\r\nHost: api.example.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        device.send(upgrade)
        rig.settle()
        // Relayed with the proxy's Via, the hop-by-hop fields it keeps for an upgrade written last.
        #expect(
            origin.take()
                == "GET /chat HTTP/1.1\r\nHost: api.example.com\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                + "Sec-WebSocket-Version: 13\r\nVia: 1.1 atsproxy\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
        let switched =
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"
        let serverFrame: [UInt8] = [0x81, 0x02] + Array("hi".utf8)
        origin.send(Array(switched.utf8) + serverFrame)
        rig.settle()
        #expect(
            device.received
                == Array(
                    ("HTTP/1.1 101 Switching Protocols\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
                        + "Via: 1.1 atsproxy\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n").utf8) + serverFrame)
        let deviceFrame: [UInt8] = [0x81, 0x88] + Array("not-http".utf8)
        device.send(deviceFrame)
        rig.settle()
        #expect(origin.received == deviceFrame, "after the 101, bytes are not read as requests")
        #expect(rig.environment.requests.isEmpty, "the upgrade's line is written when its stream ends")
        // The device's close reaches the origin; the stream ends when the origin's close comes back.
        device.closeNotify()
        client.peerEnds()
        rig.settle()
        #expect(origin.sawEnd)
        #expect(rig.environment.records.isEmpty)
        origin.closeNotify()
        upstream.peerEnds()
        rig.settle()
        let line = try #require(rig.environment.requests.first)
        #expect(line.status == 101 && line.upgrade == "websocket")
        #expect(
            line.requestBodyBytes == Int64(deviceFrame.count) && line.responseBodyBytes == Int64(serverFrame.count),
            "the frames are counted as the stream's body")
        #expect(rig.record?.action == .allowed)
    }

    @Test("half-close: the device's close_notify after its request; the answer still reaches it, then the tunnel ends")
    func halfClose() throws {
        let rig = try InterceptRig()
        let (client, upstream, device, origin) = try rig.intercepted()
        device.send(Self.request)
        rig.settle()
        device.closeNotify()
        rig.settle()
        #expect(origin.take() == Self.forwardedRequest)
        #expect(client.isOpen, "the answer is still owed")
        origin.send(Self.response)
        rig.settle()
        #expect(device.take() == Self.forwardedResponse)
        #expect(device.sawEnd, "the proxy ends its side cleanly once the answer is out")
        client.peerEnds()
        upstream.peerEnds()
        rig.settle()
        #expect(!client.isOpen && !upstream.isOpen)
        #expect(rig.record?.action == .allowed)
        #expect(rig.environment.requests.count == 1)
    }

    // MARK: - Each timeout, on the test's clock

    @Test("an origin that never answers the proxy's handshake: the handshake timeout ends it as the upstream's")
    func upstreamHandshakeTimeout() throws {
        let rig = try InterceptRig()
        let (client, upstream) = try rig.connected()
        _ = try rig.device(on: client)
        rig.settle()
        #expect(!upstream.delivered.isEmpty, "the proxy's ClientHello went up")
        let timeout = rig.environment.settings.handshakeTimeout
        rig.environment.advance(by: timeout - .milliseconds(1))
        #expect(rig.environment.records.isEmpty, "not before its time")
        rig.environment.advance(by: .milliseconds(1))
        let record = try #require(rig.record)
        #expect(record.failure == .upstreamTimeout)
        #expect(!client.isOpen && !upstream.isOpen)
    }

    @Test("a device that stops in the middle of its handshake: the handshake timeout ends it as the device's")
    func deviceHandshakeTimeout() throws {
        let rig = try InterceptRig()
        let (client, upstream) = try rig.connected()
        let device = try rig.device(on: client)
        let origin = try rig.origin(on: upstream)
        // The device's hello goes; it then falls silent while the proxy's handshakes go on.
        device.exchange()
        device.isSilent = true
        rig.settle()
        #expect(origin.handshake == .complete)
        #expect(rig.environment.records.isEmpty)
        let timeout = rig.environment.settings.handshakeTimeout
        rig.environment.advance(by: timeout)
        let record = try #require(rig.record)
        #expect(record.failure == .clientHandshakeTimeout)
        #expect(!client.isOpen)
    }

    @Test("a request head that trickles past the head timeout gets a 408 on the device's TLS")
    func headTimeout() throws {
        let rig = try InterceptRig()
        let (_, _, device, origin) = try rig.intercepted()
        device.send("GET /slow HTTP/1.1\r\nHost: api.exa")
        rig.settle()
        rig.environment.advance(by: rig.environment.settings.headTimeout - .milliseconds(1))
        device.send("mple.com\r\n")
        rig.settle()
        #expect(device.take().hasPrefix("HTTP/1.1 408 ") == false, "not before the limit")
        rig.environment.advance(by: .milliseconds(1))
        device.send("Accept: */*\r\n")
        rig.settle()
        #expect(device.take().hasPrefix("HTTP/1.1 408 "))
        #expect(origin.received.isEmpty)
        // Its request line came whole: the line names the request.
        let line = try #require(rig.environment.requests.first)
        #expect(line.status == 408 && line.method == "GET" && line.url == "https://api.example.com/slow", "\(line)")
        #expect(line.httpVersion == "HTTP/1.1")
    }

    @Test("a device that ends after a request line and part of its head: the line names the request")
    func cutOffAfterRequestLine() throws {
        let rig = try InterceptRig()
        let (_, _, device, origin) = try rig.intercepted()
        device.send("PUT /v1/items/7 HTTP/1.1\r\nHost: api.exa")
        rig.settle()
        device.closeNotify()
        rig.settle()
        #expect(origin.received.isEmpty)
        let line = try #require(rig.environment.requests.first)
        #expect(line.method == "PUT" && line.url == "https://api.example.com/v1/items/7", "\(line)")
        #expect(line.upstreamError == "the connection ended before the request was complete")
    }

    @Test("an intercepted tunnel where nothing moves: the idle timeout closes both sides")
    func idleTimeout() throws {
        let rig = try InterceptRig()
        let (client, upstream, device, origin) = try rig.intercepted()
        device.send(Self.request)
        rig.settle()
        origin.send(Self.response)
        rig.settle()
        let watch = try #require(rig.environment.idleWatches.last { $0.isWatching })
        watch.comeDue()
        rig.settle()
        #expect(!client.isOpen && !upstream.isOpen)
        let record = try #require(rig.record)
        #expect(record.failure == .closedIdle, "\(String(describing: record.upstreamError))")
    }

    @Test(
        "a device that closes right after its handshake refused the certificate (an app pinning); one that waited said nothing",
        arguments: [(waited: false, counted: true), (waited: true, counted: false)])
    func closedAfterHandshake(_ waited: Bool, _ counted: Bool) throws {
        let rig = try InterceptRig()
        let (client, _, device, _) = try rig.intercepted()
        if waited { rig.environment.advance(by: rig.environment.settings.handshakeTimeout) }
        device.closeNotify()
        client.peerEnds()
        rig.settle()
        let record = try #require(rig.record)
        #expect((record.failure == .clientRejectedCertificate) == counted)
    }
}

/// What a probe's permissive handshake sees of a server that speaks TLS 1.0 only.
func tls10Facts() -> ObservedConnection {
    var facts = compliantFacts(for: InterceptRig.host)
    facts.tlsVersion = .tls10
    facts.cipherSuite = CipherSuite(id: 0xC014)
    return facts
}

/// A request line's timings as HAR reads them (send, then wait for the answer, then receive), with
/// an upload that waits for `100 Continue`: the interim answer is part of sending, not the answer.
@Suite("Intercept sessions, scripted: timings")
struct InterceptTimingPlaybookTests {
    @Test("Expect: 100-continue: ttfb is the final answer's first byte, so send + wait + receive is the duration")
    func continueTimings() throws {
        let rig = try InterceptRig()
        let (client, _, device, origin) = try rig.intercepted()
        device.send(
            "POST /upload HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        rig.settle()
        #expect(origin.take().hasPrefix("POST /upload HTTP/1.1\r\n"))
        rig.environment.advance(by: .milliseconds(10))
        origin.send("HTTP/1.1 100 Continue\r\n\r\n")
        rig.settle()
        #expect(device.take().hasPrefix("HTTP/1.1 100 Continue\r\n"))
        // The device takes 500 ms to send its body after the 100.
        rig.environment.advance(by: .milliseconds(490))
        device.send("hello")
        rig.settle()
        #expect(origin.take() == "hello")
        rig.environment.advance(by: .milliseconds(100))
        origin.send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n")
        rig.settle()
        rig.environment.advance(by: .milliseconds(100))
        origin.send("ok")
        rig.settle()
        #expect(device.take().hasSuffix("ok"))
        let line = try #require(rig.environment.requests.first)
        #expect(line.sendMilliseconds == 500)
        #expect(line.timeToFirstByteMilliseconds == 600, "the 200's first byte, not the 100's")
        #expect(line.durationMilliseconds == 700)
        let logged = try #require(line.loggedRequest)
        let timings = HTTPArchive.Timings(logged)
        #expect(timings.send == 500 && timings.wait == 100 && timings.receive == 100)
        #expect(timings.total == line.durationMilliseconds, "HAR's time is the request's, not more")
        device.closeNotify()
        client.peerEnds()
        rig.settle()
    }
}
