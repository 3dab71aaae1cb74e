import ATSPolicy
import Foundation
import Glibc
import ProxyCore
import TLSTestSupport
import Testing

/// A tunnel opened for a compliant host whose first bytes look like TLS but hold no ClientHello the
/// proxy can read: nothing can be judged, so it fails closed. Enforce mode: a fatal alert, the close,
/// and not a byte to the server. Report mode: relayed. Logged non-compliant with `hello_unreadable`
/// either way. A valid hello over 64 KiB is judged as any other.
@Suite("Unreadable ClientHellos through the proxy", .startsProcesses(timeLimit: .seconds(60)))
struct UnreadableHelloTunnelTests {
    /// The scanner's cases, and one only the proxy refuses: a valid hello in records so small that
    /// more than the proxy holds arrives before it is complete.
    static let cases =
        UnreadableHello.all + [
            UnreadableHello(
                name: "a hello in 1-byte records, more than the proxy holds",
                bytes: TestClientHello.sized(30_000).records(fragment: 1), endsStream: false,
                reason: "no complete ClientHello in the first 135168 bytes", alert: 50)
        ]

    /// A compliant s_server behind a forwarder that counts what each connection carried (the
    /// probe's first, then the tunnel's), and a proxy in `mode` in front.
    struct Setup {
        let factory: CertificateFactory
        let server: TestTLSServer
        let forwarder: CountingForwarder
        let proxy: TestProxy

        init(mode: EnforcementMode, configure: (inout ProxySettings) -> Void = { _ in }) throws {
            factory = try compliantChain()
            server = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
            forwarder = try CountingForwarder(to: server.port)
            proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost, mode: mode, configure: configure)
        }
    }

    @Test("enforce: blocked after the 200 with a fatal alert, nothing reaches the server", arguments: cases)
    func enforce(hello: UnreadableHello) throws {
        // Verdict mode: the probe has ended, its hello sent, before the 200 (by default the device's
        // hello may be refused while the probe's is still on its way).
        let setup = try Setup(mode: .enforce) { $0.tunnelStart = .atVerdict }
        defer { setup.proxy.stop() }
        let client = try #require(openRawTunnel(setup.proxy, to: setup.forwarder.port))
        defer { close(client) }
        sendAll(client, hello.bytes)
        if hello.endsStream { shutdown(client, Int32(SHUT_WR)) }
        let answer = readUntilClosed(client)
        #expect(answer.closed, "the proxy kept the tunnel open")
        #expect(answer.bytes == [21, 3, 3, 0, 2, 2, hello.alert], "\(answer.bytes.prefix(16))")
        let line = try #require(try setup.proxy.waitForLogLines(1).first)
        #expect(line.action == "blocked", "\(line)")
        #expect(line.compliant == false, "\(line)")
        #expect((line.fields["hello_unreadable"] as? String)?.contains(hello.reason) == true, "\(line)")
        #expect(line.fields["tunnel"] as? String == "tls", "\(line)")
        // The probe's connection carried its ClientHello; the tunnel's carried nothing.
        #expect(setup.forwarder.connectionsCarryingBytesOnceEnded() == 1, "\(setup.forwarder.received)")
    }

    @Test("report: relayed to the server, and logged non-compliant with the reason", arguments: cases)
    func report(hello: UnreadableHello) throws {
        let setup = try Setup(mode: .report)
        defer { setup.proxy.stop() }
        let client = try #require(openRawTunnel(setup.proxy, to: setup.forwarder.port))
        sendAll(client, hello.bytes)
        if hello.endsStream { shutdown(client, Int32(SHUT_WR)) }
        #expect(
            setup.forwarder.awaitTunnelReceived(atLeast: hello.bytes.count),
            "the server got \(setup.forwarder.received) of \(hello.bytes.count) bytes")
        close(client)
        let line = try #require(try setup.proxy.waitForLogLines(1).first)
        #expect(line.action == "allowed", "\(line)")
        #expect(line.compliant == false, "\(line)")
        #expect((line.fields["hello_unreadable"] as? String)?.contains(hello.reason) == true, "\(line)")
    }

    @Test("a hello that stops short of complete is blocked at the head timeout")
    func stalledHello() throws {
        let setup = try Setup(mode: .enforce) { $0.headTimeout = .seconds(1) }
        defer { setup.proxy.stop() }
        let client = try #require(openRawTunnel(setup.proxy, to: setup.forwarder.port))
        defer { close(client) }
        sendAll(client, TestClientHello().records().dropLast(10))
        let answer = readUntilClosed(client)
        #expect(answer.bytes == [21, 3, 3, 0, 2, 2, 50])
        let line = try #require(try setup.proxy.waitForLogLines(1).first)
        #expect(line.action == "blocked", "\(line)")
        #expect(line.fields["hello_unreadable"] as? String == "the ClientHello was not complete within 1 s", "\(line)")
        #expect(setup.forwarder.connectionsCarryingBytesOnceEnded() == 1, "\(setup.forwarder.received)")
    }

    @Test(
        "a valid hello over 64 KiB is judged as any other: relayed whole, and openssl s_server answers it",
        arguments: [70_000, TestClientHello.largestPossible])
    func largeValidHello(size: Int) throws {
        let setup = try Setup(mode: .enforce)
        defer { setup.proxy.stop() }
        let client = try #require(openRawTunnel(setup.proxy, to: setup.forwarder.port))
        let hello = TestClientHello.sized(size).records()
        sendAll(client, hello)
        // The ServerHello's record header and handshake type.
        let answer = readAtLeast(6, from: client)
        #expect(Array(answer.prefix(3)) == [22, 3, 3] && answer.count >= 6 && answer[5] == 2, "\(answer.prefix(16))")
        #expect(setup.forwarder.awaitTunnelReceived(atLeast: hello.count), "\(setup.forwarder.received)")
        close(client)
        let line = try #require(try setup.proxy.waitForLogLines(1).first)
        #expect(line.action == "allowed", "\(line)")
        #expect(line.compliant == true, "\(line)")
        #expect(line.fields["hello_unreadable"] is NSNull, "\(line)")
        #expect(line.fields["sni"] as? String == "localhost", "\(line)")
        #expect((line.fields["observed"] as? [String: Any])?["version"] as? String == "TLSv1.3", "\(line)")
    }
}
