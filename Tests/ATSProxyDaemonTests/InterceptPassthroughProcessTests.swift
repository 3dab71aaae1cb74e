import Foundation
import TLSTestSupport
import Testing

/// What intercept mode must never intercept: the device then sees the origin's own certificate, the
/// connection line says `inspect:"passthrough"` and why, and no request line is written.
@Suite("Intercept mode's passthrough in the daemon", .startsProcesses(timeLimit: .seconds(60)))
struct InterceptPassthroughProcessTests {
    /// A fixture whose test root signed `leaf` for `host`, and an s_server with it.
    static func origin(_ host: String) throws -> (InterceptFixture, TestTLSServer) {
        let fixture = try InterceptFixture(names: [host])
        try fixture.leaf("leaf", for: [host])
        return (fixture, try TestTLSServer(directory: fixture.directory, ["-cert", "leaf.pem", "-key", "leaf.key"]))
    }

    /// s_client's first certificate is the origin's (CN=leaf under CN=root), not a minted one.
    static func expectOriginCertificate(_ fixture: InterceptFixture, _ output: CommandResult) throws {
        let leaf = try #require(
            try fixture.firstCertificate(in: output.standardOutput, savedAs: "seen.pem"), "\(output.standardError)")
        #expect(try fixture.x509(leaf, ["-subject"]).contains("CN = leaf"))
        #expect(try fixture.x509(leaf, ["-issuer"]).contains("CN = root"))
    }

    /// The only connection line says passthrough for `reason`, and there is no request line.
    static func expectPassedThrough(_ daemon: DaemonProcess, _ reason: String) throws {
        let line = try #require(daemon.lines("connection", atLeast: 1).last)
        #expect(line["inspect"] as? String == "passthrough", "\(line)")
        #expect(line["passthrough"] as? String == reason, "\(line)")
        #expect(daemon.lines("request", atLeast: 0).isEmpty)
    }

    @Test("a host pinned by NSPinnedDomains: the device sees the origin's certificate; passthrough \"pinned\"")
    func pinned() throws {
        let host = "pinned.passthrough.test"
        let (fixture, server) = try Self.origin(host)
        let pin = try fixture.factory.spkiSHA256Base64(key: "root")
        try fixture.policy.write(
            ats: "<key>NSPinnedDomains</key><dict><key>\(host)</key><dict><key>NSPinnedCAIdentities</key>"
                + "<array><dict><key>SPKI-SHA256-BASE64</key><string>\(pin)</string></dict></array></dict></dict>")
        let daemon = try fixture.daemon()
        let output = try fixture.sClient(daemon, host: host, port: server.port, serverName: host)
        try Self.expectOriginCertificate(fixture, output)
        try Self.expectPassedThrough(daemon, "pinned")
        #expect(daemon.lines("connection", atLeast: 1).last?.action == "allowed")
        #expect(daemon.terminate() == 0)
    }

    @Test(
        "--passthrough '*.example.test': the device sees the origin's certificate; passthrough \"passthrough_pattern\"")
    func pattern() throws {
        let host = "api.example.test"
        let (fixture, server) = try Self.origin(host)
        let daemon = try fixture.daemon(["--passthrough", "*.example.test"])
        let output = try fixture.sClient(daemon, host: host, port: server.port, serverName: host)
        try Self.expectOriginCertificate(fixture, output)
        try Self.expectPassedThrough(daemon, "passthrough_pattern")
        #expect(daemon.terminate() == 0)
    }

    /// h2 alone is intercepted (HTTP/2 is relayed); a protocol the proxy cannot read is not.
    @Test("a ClientHello offering ALPN with neither http/1.1 nor h2: passed through, \"no_http1_alpn\"")
    func noHTTPALPN() throws {
        let host = "custom.passthrough.test"
        let (fixture, server) = try Self.origin(host)
        let daemon = try fixture.daemon()
        let output = try fixture.sClient(
            daemon, host: host, port: server.port, serverName: host, ["-alpn", "x-custom/1,spdy/3.1"])
        try Self.expectOriginCertificate(fixture, output)
        try Self.expectPassedThrough(daemon, "no_http1_alpn")
        #expect(daemon.terminate() == 0)
    }

    @Test("cleartext after CONNECT to a host whose policy allows it: relayed to the origin, \"not_tls\"")
    func cleartext() throws {
        let host = "plain.passthrough.test"
        let fixture = try InterceptFixture(names: [host])
        try fixture.policy.write(ats: PolicyFile.insecureHTTP(for: host))
        let origin = try TestHTTPOrigin(directory: fixture.directory)
        let daemon = try fixture.daemon()
        let client = try #require(connectLoopback(port: daemon.port))
        defer { close(client) }
        #expect(
            sendAll(
                client, Array("CONNECT \(host):\(origin.port) HTTP/1.1\r\nHost: \(host):\(origin.port)\r\n\r\n".utf8)))
        let connected = try #require(receiveHead(client, wait: 10))
        #expect(connected.head.hasPrefix("HTTP/1.1 200"), "\(connected.head)")
        let answer = exchangeRaw(
            connected: client, Array("GET /plain HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n".utf8))
        let text = String(decoding: connected.rest + answer, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.0 200") || text.hasPrefix("HTTP/1.1 200"), "\(text)")
        #expect(text.contains("hello from the origin, /plain"), "\(text)")
        try Self.expectPassedThrough(daemon, "not_tls")
        #expect(daemon.terminate() == 0)
    }

    @Test(
        "a device without the CA: 3 rejections logged with unknown_ca, then the host is passed through and the 4th succeeds with the origin's certificate"
    )
    func rejectedThreeTimes() throws {
        let host = "reject.passthrough.test"
        let (fixture, server) = try Self.origin(host)
        let daemon = try fixture.daemon()
        let url = "https://\(host):\(server.port)/"
        // curl trusting only the test root: the minted leaf is from an unknown CA.
        for attempt in 1...3 {
            let curl = try fixture.curl(daemon, ["-o", "/dev/null", url], trust: fixture.factory.path("root.pem"))
            #expect(curl.status == 60, "attempt \(attempt): \(curl.standardError)")
        }
        let rejected = daemon.lines("connection", atLeast: 3)
        try #require(rejected.count == 3, "\(rejected)")
        for line in rejected {
            #expect(line["intercept_failed"] as? String == "client_rejected_certificate", "\(line)")
            #expect(line["client_alert"] as? String == "unknown_ca", "\(line)")
            #expect(line["inspect"] as? String == "intercept", "\(line)")
        }
        let fourth = try fixture.curl(daemon, [url], trust: fixture.factory.path("root.pem"))
        #expect(fourth.status == 0 && fourth.standardOutput.contains("s_server"), "\(fourth.standardError)")
        let line = try #require(daemon.lines("connection", atLeast: 4).last)
        #expect(
            line["inspect"] as? String == "passthrough" && line["passthrough"] as? String == "client_rejected_before",
            "\(line)")
        #expect(line["intercept_failed"] is NSNull && line.action == "allowed", "\(line)")
        // And s_client sees the origin's certificate now.
        let output = try fixture.sClient(daemon, host: host, port: server.port, serverName: host)
        try Self.expectOriginCertificate(fixture, output)
        #expect(daemon.lines("request", atLeast: 0).isEmpty)
        #expect(daemon.terminate() == 0)
    }
}
