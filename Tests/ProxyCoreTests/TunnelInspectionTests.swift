import ATSPolicy
import Foundation
import ProxyCore
import TLSTestSupport
import Testing

/// What the proxy reads from the bytes passing through a CONNECT tunnel: the device's ClientHello
/// (its server name, judged when it names another host) and the server's hello (the version and
/// suite the device negotiated), or cleartext, judged by the `cleartext` rule.
@Suite("Passive inspection of CONNECT tunnels", .startsProcesses(timeLimit: .seconds(60)))
struct TunnelInspectionTests {
    @Test("the version and suite the device negotiated, and its SNI, are logged")
    func observedHandshake() throws {
        let factory = try compliantChain()
        let server = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost)
        defer { proxy.stop() }
        let result = try proxy.curlHTTPS(factory, port: server.port, options: ["--tlsv1.2", "--tls-max", "1.2"])
        #expect(result.status == 0, "\(result.standardError)")
        let line = try proxy.onlyLogLine()
        #expect(line["sni"] as? String == "localhost")
        #expect(line["tunnel"] as? String == "tls")
        let observed = try #require(line["observed"] as? [String: Any])
        // curl was held to TLS 1.2 while the probe negotiated 1.3: the two are reported apart.
        #expect(observed["version"] as? String == "TLSv1.2")
        #expect((observed["cipher"] as? String)?.hasPrefix("TLS_ECDHE_") == true)
        #expect((line["tls"] as? [String: Any])?["version"] as? String == "TLSv1.3")
    }

    /// curl through the proxy to `https://other.test:PORT/`, its CONNECT sent for localhost:PORT:
    /// the TLS inside names another host than the tunnel.
    static func curlNamingOtherHost(_ proxy: TestProxy, _ factory: CertificateFactory, port: UInt16) throws
        -> CommandResult
    {
        try runCommand(
            "/usr/bin/curl",
            [
                "-sS", "--max-time", "20", "--proxy", "http://127.0.0.1:\(proxy.port)", "--cacert",
                factory.path("root.pem"),
                "--connect-to", "other.test:\(port):localhost:\(port)", "https://other.test:\(port)/",
            ])
    }

    @Test("a ClientHello naming a host the certificate does not cover is blocked after the 200")
    func serverNameMismatch() throws {
        let factory = try compliantChain()
        let server = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost)
        defer { proxy.stop() }
        let result = try Self.curlNamingOtherHost(proxy, factory, port: server.port)
        #expect(result.status != 0)
        let line = try proxy.onlyLogLine()
        #expect(line["host"] as? String == "localhost")
        #expect(line["sni"] as? String == "other.test")
        #expect(line["action"] as? String == "blocked")
        #expect(line["compliant"] as? Bool == false)
        #expect(line["violations"] as? [String] == ["name_mismatch"])
        let check = try #require(line["sni_check"] as? [String: Any])
        #expect(check["host"] as? String == "other.test")
        #expect((line["rule"] as? [String: Any])?["kind"] as? String == "default")
    }

    @Test("a ClientHello naming another host the certificate covers passes, and is judged by its own rule")
    func serverNameCovered() throws {
        let factory = try compliantChain(subjectAltNames: ["DNS:localhost", "DNS:other.test"])
        let server = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost)
        defer { proxy.stop() }
        let result = try Self.curlNamingOtherHost(proxy, factory, port: server.port)
        #expect(result.status == 0, "\(result.standardError)")
        let line = try proxy.onlyLogLine()
        #expect(line["action"] as? String == "allowed")
        #expect(line["compliant"] as? Bool == true)
        let check = try #require(line["sni_check"] as? [String: Any])
        #expect(check["compliant"] as? Bool == true)
        #expect((check["rule"] as? [String: Any])?["kind"] as? String == "default")
    }

    /// In enforce mode a cleartext server where cleartext is forbidden is refused at the CONNECT
    /// (SpeaksFirstUpstreamTests); report mode opens the tunnel and judges what the device sends.
    @Test("cleartext HTTP inside a CONNECT tunnel is judged by the cleartext rule", arguments: [true, false])
    func cleartextTunnel(allowed: Bool) throws {
        let factory = try compliantChain()
        let origin = try TestHTTPOrigin(directory: factory.directory)
        let proxy = try TestProxy.start(
            factory, policyXML: allowed ? insecureLocalhost : fullATSForLocalhost, mode: allowed ? .enforce : .report)
        defer { proxy.stop() }
        let result = try runCommand(
            "/usr/bin/curl",
            [
                "-sS", "--max-time", "20", "--proxytunnel", "--proxy", "http://127.0.0.1:\(proxy.port)",
                "http://localhost:\(origin.port)/inside",
            ])
        let line = try proxy.onlyLogLine()
        #expect(line["method"] as? String == "CONNECT")
        #expect(line["tunnel"] as? String == "cleartext")
        #expect(line["scheme"] as? String == "http")
        if allowed {
            #expect(result.standardOutput == "hello from the origin, /inside\n")
            #expect(line["action"] as? String == "allowed")
            #expect(line["compliant"] as? Bool == true)
        } else {
            #expect(result.standardOutput == "hello from the origin, /inside\n")
            #expect(line["action"] as? String == "allowed")
            #expect(line["compliant"] as? Bool == false)
            #expect(line["violations"] as? [String] == ["cleartext"])
            #expect((line["error"] as? [String: Any])?["nsurl"] as? Int == -1022)
        }
    }

    @Test("enforce mode refuses the CONNECT to a cleartext server where ATS forbids cleartext")
    func cleartextServerRefused() throws {
        let factory = try compliantChain()
        let origin = try TestHTTPOrigin(directory: factory.directory)
        // Refused at the CONNECT: verdict mode (the default's is refused inside the tunnel:
        // cleartextServerRefusedInTunnel).
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost) { $0.tunnelStart = .atVerdict }
        defer { proxy.stop() }
        let result = try runCommand(
            "/usr/bin/curl",
            [
                "-sS", "--max-time", "20", "--proxytunnel", "--proxy", "http://127.0.0.1:\(proxy.port)",
                "http://localhost:\(origin.port)/inside",
            ])
        #expect(result.standardError.contains("CONNECT tunnel failed, response 403"), "\(result.standardError)")
        let line = try proxy.onlyLogLine()
        #expect(line["action"] as? String == "blocked")
        #expect(line["violations"] as? [String] == ["cleartext"])
        #expect((line["upstream_error"] as? String)?.contains("does not speak TLS") == true)
    }

    @Test(
        "the default: a cleartext request in a tunnel opened before the verdict gets Apple's 403 inside it, and nothing reaches the server"
    )
    func cleartextServerRefusedInTunnel() throws {
        let factory = try compliantChain()
        let origin = try TestHTTPOrigin(directory: factory.directory)
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost)
        defer { proxy.stop() }
        let result = try runCommand(
            "/usr/bin/curl",
            [
                "-sS", "--max-time", "20", "--proxytunnel", "--proxy", "http://127.0.0.1:\(proxy.port)",
                "-o", "/dev/null", "-w", "%{http_connect} %{http_code}", "http://localhost:\(origin.port)/inside",
            ])
        #expect(result.standardOutput == "200 403", "the tunnel opened, and the request inside it was refused")
        let line = try proxy.onlyLogLine()
        #expect(line["action"] as? String == "blocked")
        #expect(line["violations"] as? [String] == ["cleartext"])
        #expect(line["bytes_up"] as? Int == 0, "the refused request never went to the server")
    }

    @Test("a device speaking TLS to a server that does not is cut off, and the log says why")
    func tlsToCleartextServer() throws {
        let factory = try compliantChain()
        let origin = try TestHTTPOrigin(directory: factory.directory)
        // Cleartext allowed, so the tunnel opens and the device's TLS is what fails.
        let proxy = try TestProxy.start(factory, policyXML: insecureLocalhost)
        defer { proxy.stop() }
        let result = try proxy.curlHTTPS(factory, port: origin.port)
        #expect(result.status != 0)
        let line = try proxy.onlyLogLine()
        #expect(line["action"] as? String == "failed")
        #expect((line["upstream_error"] as? String)?.contains("does not speak TLS") == true)
    }
}
