import ATSPolicy
import EventLoop
import Foundation
import ProxyCore
import TLSInspection
import TLSTestSupport
import Testing

/// The proxy on a real event loop, real openssl servers behind it, and curl in front.
@Suite("CONNECT through the proxy with curl", .startsProcesses(timeLimit: .seconds(60)))
struct ConnectTunnelTests {
    @Test("a compliant server: 200, the page comes through the tunnel, and one log line says allowed")
    func compliant() throws {
        let factory = try compliantChain()
        let server = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost)
        defer { proxy.stop() }
        let result = try proxy.curlHTTPS(factory, port: server.port)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.contains("s_server"))
        let line = try #require(try proxy.waitForLogLines(1).first?.fields)
        #expect(line["action"] as? String == "allowed")
        #expect(line["compliant"] as? Bool == true)
        #expect(line["method"] as? String == "CONNECT")
        let client = try #require(line["client"] as? String)
        #expect(client.hasPrefix("127.0.0.1:") && UInt16(client.dropFirst("127.0.0.1:".count)) != nil, "\(client)")
        #expect((line["bytes_down"] as? Int ?? 0) > 0)
        #expect((line["tls"] as? [String: Any])?["version"] as? String == "TLSv1.3")
    }

    @Test("a TLS 1.0 server: 403 with the violation, and the log line says blocked")
    func blocked() throws {
        let factory = try compliantChain()
        let server = try TestTLSServer(
            directory: factory.directory,
            ["-cert", "leaf.pem", "-key", "leaf.key", "-tls1", "-cipher", "ECDHE-RSA-AES128-SHA:@SECLEVEL=0"])
        // The 403 at the CONNECT: verdict mode (the default's first connection fails with an alert:
        // TunnelStartAtConnectTests).
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost) { $0.tunnelStart = .atVerdict }
        defer { proxy.stop() }
        let result = try proxy.curlHTTPS(factory, port: server.port)
        #expect(result.status != 0)
        #expect(result.standardError.contains("403"))
        let line = try #require(try proxy.waitForLogLines(1).first?.fields)
        #expect(line["action"] as? String == "blocked")
        #expect(line["violations"] as? [String] == ["tls_version"])
        #expect((line["error"] as? [String: Any])?["nsurl"] as? Int == -1200)
    }

    @Test("report mode lets the same TLS 1.0 connection through and logs it as non-compliant")
    func reportMode() throws {
        let factory = try compliantChain()
        let server = try TestTLSServer(
            directory: factory.directory,
            ["-cert", "leaf.pem", "-key", "leaf.key", "-tls1", "-cipher", "ECDHE-RSA-AES128-SHA:@SECLEVEL=0"])
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost, mode: .report)
        defer { proxy.stop() }
        // curl itself must be allowed to speak TLS 1.0 to the server through the tunnel.
        let result = try runCommand(
            "/usr/bin/curl",
            [
                "-sS", "--max-time", "20", "--proxy", "http://127.0.0.1:\(proxy.port)", "--cacert",
                factory.path("root.pem"),
                "--tlsv1.0", "--ciphers", "DEFAULT:@SECLEVEL=0", "--resolve", "localhost:\(server.port):127.0.0.1",
                "https://localhost:\(server.port)/",
            ])
        let line = try #require(try proxy.waitForLogLines(1).first?.fields)
        #expect(line["action"] as? String == "allowed")
        #expect(line["compliant"] as? Bool == false)
        #expect(line["violations"] as? [String] == ["tls_version"])
        _ = result  // whether curl's own TLS 1.0 handshake succeeds depends on the local OpenSSL policy
    }

    @Test("nothing listening upstream: 502 and a failed log line with the reason")
    func unreachable() throws {
        let factory = try compliantChain()
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost)
        defer { proxy.stop() }
        let result = try proxy.curlHTTPS(factory, port: 1)
        #expect(result.standardError.contains("502"))
        let line = try #require(try proxy.waitForLogLines(1).first?.fields)
        #expect(line["action"] as? String == "failed")
        #expect((line["upstream_error"] as? String)?.contains("refused") == true)
    }

    @Test("garbage instead of a request gets 400 and the proxy keeps serving")
    func garbage() throws {
        let factory = try compliantChain()
        let server = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost)
        defer { proxy.stop() }
        let bad = exchangeRaw(port: proxy.port, [0x16, 0x03, 0x01] + Array("garbage\r\n\r\n".utf8))
        let good = try proxy.curlHTTPS(factory, port: server.port)
        #expect(String(decoding: bad, as: UTF8.self).hasPrefix("HTTP/1.1 400 Bad Request"))
        #expect(good.status == 0, "\(good.standardError)")
    }

    @Test("plain http:// to a host that needs HTTPS: 403 with Apple's cleartext message, logged as blocked")
    func cleartextBlocked() throws {
        let factory = try compliantChain()
        let proxy = try TestProxy.start(factory, policyXML: "")
        defer { proxy.stop() }
        let response = exchangeRaw(
            port: proxy.port, Array("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n".utf8))
        let text = String(decoding: response, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 403 Forbidden"))
        #expect(text.contains("X-ATS-Error: -1022"))
        #expect(
            text.contains(
                "App Transport Security has blocked a cleartext HTTP (http://) resource load since it is insecure"))
        let line = try #require(try proxy.waitForLogLines(1).first?.fields)
        #expect(line["action"] as? String == "blocked")
        #expect(line["scheme"] as? String == "http")
        #expect(line["violations"] as? [String] == ["cleartext"])
    }

    @Test("a client outside --allow-client gets 403 and nothing is probed")
    func clientNotAllowed() throws {
        let factory = try compliantChain()
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost) {
            $0.allowedClients = [try! AddressRange(parsing: "10.0.0.0/8")]
        }
        defer { proxy.stop() }
        // A server at the CONNECT's address, to show the proxy never reached it.
        let server = try #require(LoopbackListener())
        let response = exchangeRaw(
            port: proxy.port, Array("CONNECT localhost:\(server.port) HTTP/1.1\r\n\r\n".utf8))
        let text = String(decoding: response, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 403 Forbidden"))
        #expect(text.contains("is not allowed to use this proxy"))
        #expect(!server.hasConnection(within: 1), "the proxy connected to the server for a client it refused")
    }
}
