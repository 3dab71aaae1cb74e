import ATSPolicy
import EventLoop
import Foundation
import ProxyCore
import TLSInspection
import TLSTestSupport
import Testing

/// The proxy on a real event loop, real openssl servers behind it, and curl in front.
@Suite("CONNECT through the proxy with curl")
struct ConnectTunnelTests {
    struct Proxy {
        let loop: EventLoopThread
        let port: UInt16
        let logPath: String
    }

    /// Starts a proxy on 127.0.0.1:0 with `policyXML` and the factory's root as a user-installed anchor.
    static func startProxy(
        _ factory: CertificateFactory, policyXML: String, mode: EnforcementMode = .enforce,
        allowedClients: [AddressRange] = ProxySettings.loopback
    ) throws -> Proxy {
        let policy = try PolicyLoader.load(bytes: Array("<plist version=\"1.0\"><dict>\(policyXML)</dict></plist>".utf8), file: "p.plist")
        let anchors = try TrustAnchors.loading(caFiles: [factory.path("root.pem")], systemRoots: false)
        let logPath = factory.path("proxy.log")
        let log = try LogWriter(path: logPath)
        let settings = ProxySettings(policy: policy, mode: mode, allowedClients: allowedClients)
        let probes = ProbeService(anchors: anchors, timeout: .seconds(5))
        let cache = VerdictCache<VerdictKey, ProbeReport>(timeToLiveMilliseconds: 300_000)
        let (loop, port) = try EventLoopThread.start { base in
            let resolver = try DNSResolver(base: base)
            let server = try ProxyServer(
                base: base, listen: [try SocketAddress(parsing: "127.0.0.1:0")], settings: settings, probes: probes,
                cache: cache, log: log, resolver: resolver)
            return (keepAlive: server, info: server.addresses.first?.port ?? 0)
        }
        return Proxy(loop: loop, port: port, logPath: logPath)
    }

    static func chain() throws -> CertificateFactory {
        let factory = try CertificateFactory()
        try factory.rootCA("root")
        try factory.certificate(
            "leaf", issuer: "root", extensions: ["subjectAltName=DNS:localhost", "extendedKeyUsage=serverAuth"])
        return factory
    }

    static func curl(_ proxy: Proxy, _ factory: CertificateFactory, port: UInt16) throws -> CommandResult {
        try runCommand("/usr/bin/curl", [
            "-sS", "--max-time", "20", "--proxy", "http://127.0.0.1:\(proxy.port)", "--cacert", factory.path("root.pem"),
            "--resolve", "localhost:\(port):127.0.0.1", "https://localhost:\(port)/",
        ])
    }

    static func logLines(_ path: String) throws -> [[String: Any]] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return try text.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    /// Full ATS for localhost: an exception entry with no keys (the local-host exemption is off).
    static let fullATS = "<key>NSExceptionDomains</key><dict><key>localhost</key><dict/></dict>"

    @Test("a compliant server: 200, the page comes through the tunnel, and one log line says allowed")
    func compliant() throws {
        let factory = try Self.chain()
        let server = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let proxy = try Self.startProxy(factory, policyXML: Self.fullATS)
        let result = try Self.curl(proxy, factory, port: server.port)
        proxy.loop.stop()
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.contains("s_server"))
        let line = try #require(try Self.logLines(proxy.logPath).first)
        #expect(line["action"] as? String == "allowed")
        #expect(line["compliant"] as? Bool == true)
        #expect(line["method"] as? String == "CONNECT")
        #expect((line["bytes_down"] as? Int ?? 0) > 0)
        #expect((line["tls"] as? [String: Any])?["version"] as? String == "TLSv1.3")
    }

    @Test("a TLS 1.0 server: 403 with the violation, and the log line says blocked")
    func blocked() throws {
        let factory = try Self.chain()
        let server = try TestTLSServer(
            directory: factory.directory,
            ["-cert", "leaf.pem", "-key", "leaf.key", "-tls1", "-cipher", "ECDHE-RSA-AES128-SHA:@SECLEVEL=0"])
        let proxy = try Self.startProxy(factory, policyXML: Self.fullATS)
        let result = try Self.curl(proxy, factory, port: server.port)
        proxy.loop.stop()
        #expect(result.status != 0)
        #expect(result.standardError.contains("403"))
        let line = try #require(try Self.logLines(proxy.logPath).first)
        #expect(line["action"] as? String == "blocked")
        #expect(line["violations"] as? [String] == ["tls_version"])
        #expect((line["error"] as? [String: Any])?["nsurl"] as? Int == -1200)
    }

    @Test("report mode lets the same TLS 1.0 connection through and logs it as non-compliant")
    func reportMode() throws {
        let factory = try Self.chain()
        let server = try TestTLSServer(
            directory: factory.directory,
            ["-cert", "leaf.pem", "-key", "leaf.key", "-tls1", "-cipher", "ECDHE-RSA-AES128-SHA:@SECLEVEL=0"])
        let proxy = try Self.startProxy(factory, policyXML: Self.fullATS, mode: .report)
        // curl itself must be allowed to speak TLS 1.0 to the server through the tunnel.
        let result = try runCommand("/usr/bin/curl", [
            "-sS", "--max-time", "20", "--proxy", "http://127.0.0.1:\(proxy.port)", "--cacert", factory.path("root.pem"),
            "--tlsv1.0", "--ciphers", "DEFAULT:@SECLEVEL=0", "--resolve", "localhost:\(server.port):127.0.0.1",
            "https://localhost:\(server.port)/",
        ])
        proxy.loop.stop()
        let line = try #require(try Self.logLines(proxy.logPath).first)
        #expect(line["action"] as? String == "allowed")
        #expect(line["compliant"] as? Bool == false)
        #expect(line["violations"] as? [String] == ["tls_version"])
        _ = result  // whether curl's own TLS 1.0 handshake succeeds depends on the local OpenSSL policy
    }

    @Test("nothing listening upstream: 502 and a failed log line with the reason")
    func unreachable() throws {
        let factory = try Self.chain()
        let proxy = try Self.startProxy(factory, policyXML: Self.fullATS)
        let result = try Self.curl(proxy, factory, port: 1)
        proxy.loop.stop()
        #expect(result.standardError.contains("502"))
        let line = try #require(try Self.logLines(proxy.logPath).first)
        #expect(line["action"] as? String == "failed")
        #expect((line["upstream_error"] as? String)?.contains("refused") == true)
    }

    @Test("garbage instead of a request gets 400 and the proxy keeps serving")
    func garbage() throws {
        let factory = try Self.chain()
        let server = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let proxy = try Self.startProxy(factory, policyXML: Self.fullATS)
        let bad = exchangeRaw(port: proxy.port, [0x16, 0x03, 0x01] + Array("garbage\r\n\r\n".utf8))
        let good = try Self.curl(proxy, factory, port: server.port)
        proxy.loop.stop()
        #expect(String(decoding: bad, as: UTF8.self).hasPrefix("HTTP/1.1 400 Bad Request"))
        #expect(good.status == 0, "\(good.standardError)")
    }

    @Test("plain http:// to a host that needs HTTPS: 403 with Apple's cleartext message, logged as blocked")
    func cleartextBlocked() throws {
        let factory = try Self.chain()
        let proxy = try Self.startProxy(factory, policyXML: "")
        let response = exchangeRaw(port: proxy.port, Array("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n".utf8))
        proxy.loop.stop()
        let text = String(decoding: response, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 403 Forbidden"))
        #expect(text.contains("X-ATS-Error: -1022"))
        #expect(text.contains("App Transport Security has blocked a cleartext HTTP (http://) resource load since it is insecure"))
        let line = try #require(try Self.logLines(proxy.logPath).first)
        #expect(line["action"] as? String == "blocked")
        #expect(line["scheme"] as? String == "http")
        #expect(line["violations"] as? [String] == ["cleartext"])
    }

    @Test("a client outside --allow-client gets 403 and nothing is probed")
    func clientNotAllowed() throws {
        let factory = try Self.chain()
        let proxy = try Self.startProxy(
            factory, policyXML: Self.fullATS, allowedClients: [try AddressRange(parsing: "10.0.0.0/8")])
        let response = exchangeRaw(port: proxy.port, Array("CONNECT localhost:443 HTTP/1.1\r\n\r\n".utf8))
        proxy.loop.stop()
        let text = String(decoding: response, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 403 Forbidden"))
        #expect(text.contains("is not allowed to use this proxy"))
    }
}
