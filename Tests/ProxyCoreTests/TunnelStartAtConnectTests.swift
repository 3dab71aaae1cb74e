import ATSPolicy
import EventLoop
import Foundation
import Glibc
import ProxyCore
import TLSInspection
import TLSTestSupport
import Testing

/// `--tunnel-start connect` on a real loop, with openssl servers and curl: the 200 before the
/// verdict, the device's hello at the server while the probe runs, and the server's answer held.
@Suite("Tunnel start at connect, end to end", .startsProcesses(timeLimit: .seconds(90)))
struct TunnelStartAtConnectTests {
    static func startProxy(_ factory: CertificateFactory) throws -> TestProxy {
        try TestProxy.start(factory, policyXML: fullATSForLocalhost) { $0.tunnelStart = .atConnect }
    }

    @Test("a compliant server: the page comes through, the 200 went before the verdict, and one connection served it")
    func compliant() throws {
        let factory = try compliantChain()
        let server = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let forwarder = try CountingForwarder(to: server.port)
        let proxy = try Self.startProxy(factory)
        defer { proxy.stop() }
        let result = try proxy.curlHTTPS(factory, port: forwarder.port)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.contains("s_server"))
        let line = try #require(try proxy.waitForLogLines(1).first)
        #expect(line.action == "allowed", "\(line)")
        #expect(line.compliant == true, "\(line)")
        let timing = try #require(line.fields["timing"] as? [String: Any], "\(line)")
        let established = try #require(timing["established_ms"] as? Int, "\(line)")
        let verdict = try #require(timing["verdict_ms"] as? Int, "\(line)")
        #expect(established <= verdict, "the 200 went before the verdict: \(timing)")
        // The probe's connection and the tunnel's; none given up and opened again (unless an
        // escape fired, which needs a verdict later than twice the connect and 100 ms).
        #expect((2...3).contains(forwarder.connectionsCarryingBytesOnceEnded() ?? 0), "\(forwarder.received)")
    }

    @Test("a TLS 1.0 server: the first connection's handshake fails with an alert; the next CONNECT gets its 403")
    func blocked() throws {
        let factory = try compliantChain()
        let server = try TestTLSServer(
            directory: factory.directory,
            ["-cert", "leaf.pem", "-key", "leaf.key", "-tls1", "-cipher", "ECDHE-RSA-AES128-SHA:@SECLEVEL=0"])
        let proxy = try Self.startProxy(factory)
        defer { proxy.stop() }
        let first = try proxy.curlHTTPS(factory, port: server.port)
        #expect(first.status != 0)
        #expect(!first.standardError.contains("403"), "\(first.standardError)")
        #expect(!first.standardOutput.contains("s_server"))
        let line = try #require(try proxy.waitForLogLines(1).first)
        #expect(line.action == "blocked", "\(line)")
        #expect(line.fields["violations"] as? [String] == ["tls_version"], "\(line)")
        let second = try proxy.curlHTTPS(factory, port: server.port)
        #expect(second.status != 0)
        #expect(second.standardError.contains("403"), "\(second.standardError)")
    }

    @Test(
        "a server that accepts and never answers: the device's handshake ends at the handshake deadline, and the line says why"
    )
    func silentServer() throws {
        let factory = try compliantChain()
        let server = try HostileUpstreamTests.silentServer()
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost) {
            $0.tunnelStart = .atConnect
            $0.handshakeTimeout = .seconds(2)
        }
        defer { proxy.stop() }
        let result = try proxy.curlHTTPS(factory, port: server.port)
        #expect(result.status != 0, "curl got through to a server that never spoke")
        #expect(
            !result.standardError.contains("timed out"),
            "the proxy, not curl's own limit, ended it: \(result.standardError)")
        let line = try #require(try proxy.waitForLogLines(1).first)
        #expect(line.action == "failed", "\(line)")
        #expect(line.fields["failure"] as? String == "upstream_timeout", "\(line)")
        #expect(line.upstreamError?.contains("in 2 s") == true, "\(line)")
    }

    @Test("a server that serves one connection at a time, behind a forwarder that does not keep their order: served")
    func serialServerBehindReorderingForwarder() throws {
        let factory = try compliantChain()
        // openssl s_server serves one connection at a time; the forwarder's thread per connection
        // can hand it the tunnel's connection before the probe's.
        let server = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let forwarder = try CountingForwarder(to: server.port)
        // A proxy each time: each is a first connection, with a probe beside it.
        for attempt in 1...3 {
            let proxy = try Self.startProxy(factory)
            defer { proxy.stop() }
            let result = try proxy.curlHTTPS(factory, port: forwarder.port)
            #expect(result.status == 0, "attempt \(attempt): \(result.standardError)")
        }
    }
}
