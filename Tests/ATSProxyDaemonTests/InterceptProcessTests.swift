import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// The real daemon in `--inspect intercept` between curl or openssl s_client and real servers
/// (openssl s_server, nginx, the Python origin): the certificate it mints, the requests it relays
/// and logs, how it blocks, and the HAR made from its log.
@Suite("Intercept mode in the daemon", .startsProcesses(timeLimit: .seconds(60)))
struct InterceptProcessTests {
    // MARK: - The minted leaf

    /// The leaf the device was shown, checked with openssl against the CA's certificate.
    static func expectMintedLeaf(_ fixture: InterceptFixture, _ output: CommandResult, san: String) throws {
        let leaf = try #require(
            try fixture.firstCertificate(in: output.standardOutput, savedAs: "minted.pem"), "\(output.standardError)")
        let verify = try runCommand(
            "/usr/bin/openssl", ["verify", "-CAfile", fixture.caPEM, "-purpose", "sslserver", leaf])
        #expect(
            verify.status == 0 && verify.standardOutput.contains(": OK"),
            "\(verify.standardOutput) \(verify.standardError)")
        let names = try fixture.x509(leaf, ["-ext", "subjectAltName"])
        #expect(names.contains(san), "\(names)")
        let usage = try fixture.x509(leaf, ["-ext", "extendedKeyUsage"])
        #expect(usage.contains("TLS Web Server Authentication"), "\(usage)")
        let text = try fixture.x509(leaf, ["-text"])
        let algorithm = text.split(separator: "\n").first { $0.contains("Signature Algorithm:") } ?? ""
        #expect(algorithm.lowercased().contains("sha256"), "\(algorithm)")
        let dates = try fixture.x509(leaf, ["-dates"])
        let notBefore = try #require(Self.date(in: dates, "notBefore="), "\(dates)")
        let notAfter = try #require(Self.date(in: dates, "notAfter="), "\(dates)")
        #expect(notAfter.timeIntervalSince(notBefore) <= 825 * 86_400, "\(dates)")
        #expect(notBefore <= Date() && Date() < notAfter, "\(dates)")
        // Minted, not the origin's: issued by the CA, whose subject is not the test root's.
        let issuer = try fixture.x509(leaf, ["-issuer"])
        let caSubject = try fixture.x509(fixture.caPEM, ["-subject"])
        #expect(issuer.dropFirst("issuer=".count) == caSubject.dropFirst("subject=".count), "\(issuer) \(caSubject)")
    }

    /// "notAfter=Nov 24 15:53:24 2026 GMT" in openssl's `-dates` output.
    static func date(in text: String, _ prefix: String) -> Date? {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) else { return nil }
        let words = line.dropFirst(prefix.count).split(separator: " ").joined(separator: " ")
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "MMM d HH:mm:ss yyyy zzz"
        return formatter.date(from: words)
    }

    @Test(
        "the minted leaf for an SNI: verifies against ca.pem for sslserver, names the host, serverAuth, SHA-256, ≤ 825 days"
    )
    func mintedLeafForServerName() throws {
        let host = "mint.intercept.test"
        let fixture = try InterceptFixture(names: [host])
        try fixture.leaf("leaf", for: [host])
        let server = try TestTLSServer(directory: fixture.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let daemon = try fixture.daemon()
        let output = try fixture.sClient(daemon, host: host, port: server.port, serverName: host)
        try Self.expectMintedLeaf(fixture, output, san: "DNS:\(host)")
        let line = try #require(daemon.lines("connection", atLeast: 1).first)
        #expect(line["inspect"] as? String == "intercept", "\(line)")
        #expect(daemon.terminate() == 0)
    }

    @Test("no SNI (a CONNECT to 127.0.0.1): the minted leaf has an IP SAN")
    func mintedLeafForAddress() throws {
        let fixture = try InterceptFixture(names: [])
        try fixture.leaf("leaf", for: ["127.0.0.1"])
        let server = try TestTLSServer(directory: fixture.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let daemon = try fixture.daemon(["--mode", "report"])
        let output = try fixture.sClient(daemon, host: "127.0.0.1", port: server.port, serverName: nil)
        try Self.expectMintedLeaf(fixture, output, san: "IP Address:127.0.0.1")
        #expect(daemon.terminate() == 0)
    }

    // MARK: - Requests

    @Test(
        "two URLs on one kept-alive connection to nginx: two request lines, one connection_id, the second reused, a 1 MiB body byte-exact; the HAR has both"
    )
    func keptAlive() throws {
        let host = "nginx.intercept.test"
        let fixture = try InterceptFixture(names: [host])
        try fixture.leaf("leaf", for: [host])
        try FileManager.default.createDirectory(
            atPath: fixture.factory.path("files"), withIntermediateDirectories: true)
        var generator = SplitMix64(seed: 7)
        let big = Data((0..<(1 << 20)).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
        try big.write(to: URL(fileURLWithPath: fixture.factory.path("files/big.bin")))
        let nginx = try TestNginx(
            directory: fixture.directory, certificates: ["leaf"],
            locations: "location /files/ { alias \(fixture.factory.path("files"))/; }")
        let daemon = try fixture.daemon()
        let base = "https://\(host):\(nginx.ports[0])"
        let curl = try fixture.curl(
            daemon,
            [
                "-o", fixture.factory.path("a.out"), "-o", fixture.factory.path("big.out"), base + "/a",
                base + "/files/big.bin",
            ])
        #expect(curl.status == 0, "\(curl.standardError)")
        #expect(try String(contentsOfFile: fixture.factory.path("a.out"), encoding: .utf8) == "hello from nginx\n")
        #expect(try sha256sum(fixture.factory.path("big.out")) == sha256sum(fixture.factory.path("files/big.bin")))

        let requests = daemon.lines("request", atLeast: 2)
        let connections = daemon.lines("connection", atLeast: 1)
        try #require(requests.count == 2 && connections.count == 1, "\(requests) \(connections)")
        let id = connections[0]["connection_id"] as? Int
        #expect(id != nil && requests.allSatisfy { $0["connection_id"] as? Int == id }, "\(requests)")
        #expect(requests.map { $0["reused"] as? Bool } == [false, true])
        #expect(requests.map { $0["url"] as? String } == [base + "/a", base + "/files/big.bin"])
        #expect(requests.map { $0["status"] as? Int } == [200, 200])
        #expect(requests[1]["response_body_bytes"] as? Int == 1 << 20, "\(requests[1])")
        #expect(connections[0]["requests"] as? Int == 2, "\(connections[0])")

        // The HAR from the real log: an entry per request line.
        let har = atsproxyctl("har", daemon.logPath)
        #expect(har.exitCode == 0, "\(har.standardError)")
        let entries = jsonValue(jsonObject(har.standardOutput), "log", "entries") as? [[String: Any]]
        #expect(entries?.count == requests.count, "\(har.standardOutput.prefix(500))")
        #expect(daemon.terminate() == 0)
    }

    @Test(
        "a second connection to the same server resumes the proxy's upstream session: the same facts and verdict, upstream_resumed true; an expired server is judged non-compliant on resumption too",
        arguments: [false, true])
    func resumption(expired: Bool) throws {
        let host = expired ? "expired-resume.intercept.test" : "resume.intercept.test"
        let fixture: InterceptFixture
        let port: UInt16
        var keep: [AnyObject] = []
        if expired {
            let (expiredFixture, server) = try Self.expiredServer(host)
            (fixture, port) = (expiredFixture, server.port)
            keep.append(server)
        } else {
            fixture = try InterceptFixture(names: [host])
            try fixture.leaf("leaf", for: [host])
            let nginx = try TestNginx(directory: fixture.directory, certificates: ["leaf"])
            (port) = nginx.ports[0]
            keep.append(nginx)
        }
        let daemon = try fixture.daemon(expired ? ["--mode", "report"] : [])
        for _ in 0..<3 {
            let curl = try fixture.curl(daemon, ["-o", "/dev/null", "https://\(host):\(port)/"])
            #expect(curl.status == 0, "\(curl.standardError)")
        }
        let connections = daemon.lines("connection", atLeast: 3)
        try #require(connections.count == 3, "\(connections)")
        // The first is a full handshake; the server's ticket lets the next ones resume.
        #expect(connections.map { $0["upstream_resumed"] as? Bool } == [false, true, true], "\(connections)")
        #expect(Set(connections.map { $0.compliant }).count == 1 && connections[0].compliant == !expired)
        #expect(Set(connections.map { $0.violationNames }).count == 1, "the same violations on resumption")
        let certificates = connections.map { jsonValue($0, "tls", "certificates") as? [[String: Any]] }
        #expect(
            certificates.allSatisfy {
                $0?.first?["subject"] as? String == certificates[0]?.first?["subject"] as? String
            })
        #expect(daemon.terminate() == 0)
        withExtendedLifetime(keep) {}
    }

    @Test(
        "uploads: a POST body with Expect: 100-continue and a chunked one reach the origin byte-exact; a Connection: close response is relayed whole"
    )
    func uploadsAndClose() throws {
        let host = "origin.intercept.test"
        let fixture = try InterceptFixture(names: [host])
        try fixture.leaf("leaf", for: [host])
        let origin = try TestHTTPOrigin(
            directory: fixture.directory, certificate: fixture.factory.path("leaf.pem"),
            key: fixture.factory.path("leaf.key"))
        var generator = SplitMix64(seed: 11)
        let body = Data((0..<300_000).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
        let bodyPath = fixture.factory.path("body.bin")
        try body.write(to: URL(fileURLWithPath: bodyPath))
        let digest = try sha256sum(bodyPath) + " \(body.count)\n"
        let daemon = try fixture.daemon(["--log-headers", "on"])
        let base = "https://\(host):\(origin.port)"

        let continued = try fixture.curl(
            daemon, ["-H", "Expect: 100-continue", "--data-binary", "@" + bodyPath, base + "/digest"])
        #expect(
            continued.status == 0 && continued.standardOutput == digest,
            "\(continued.standardOutput) \(continued.standardError)")
        // The origin's /digest reads Content-Length bodies only; /echo decodes chunked ones and sends them back.
        let echoed = fixture.factory.path("echoed.bin")
        let chunked = try fixture.curl(
            daemon, ["-o", echoed, "-H", "Transfer-Encoding: chunked", "--data-binary", "@" + bodyPath, base + "/echo"])
        #expect(chunked.status == 0, "\(chunked.standardError)")
        #expect(try sha256sum(echoed) == sha256sum(bodyPath), "the chunked body came back changed")
        let closed = try fixture.curl(daemon, [base + "/close"])
        #expect(closed.status == 0 && closed.standardOutput == "until the origin closes\n", "\(closed.standardError)")

        let requests = daemon.lines("request", atLeast: 3)
        try #require(requests.count == 3, "\(requests)")
        #expect(requests.map { $0["method"] as? String } == ["POST", "POST", "GET"])
        #expect(requests.map { $0["status"] as? Int } == [200, 200, 200], "\(requests)")
        #expect(requests[0]["request_body_bytes"] as? Int == body.count, "\(requests[0])")
        #expect(requests[1]["response_body_bytes"] as? Int == body.count, "\(requests[1])")
        #expect(headerValue(requests[0]["request_headers"], "Expect") == "100-continue", "\(requests[0])")
        #expect(headerValue(requests[1]["request_headers"], "Transfer-Encoding") == "chunked", "\(requests[1])")
        #expect(headerValue(requests[2]["response_headers"], "Connection") == "close", "\(requests[2])")
        #expect(requests[2]["response_body_bytes"] as? Int == "until the origin closes\n".utf8.count, "\(requests[2])")
        #expect(daemon.lines("connection", atLeast: 3).allSatisfy { $0["requests"] as? Int == 1 })
        #expect(daemon.terminate() == 0)
    }

    @Test("chunked bodies are counted decoded (docs/request-log.md: chunked framing excluded), both ways")
    func chunkedBodyCounts() throws {
        let host = "chunks.intercept.test"
        let fixture = try InterceptFixture(names: [host])
        try fixture.leaf("leaf", for: [host])
        let origin = try TestHTTPOrigin(
            directory: fixture.directory, certificate: fixture.factory.path("leaf.pem"),
            key: fixture.factory.path("leaf.key"))
        let daemon = try fixture.daemon()
        let base = "https://\(host):\(origin.port)"
        let body = String(repeating: "0123456789abcdef", count: 1000)
        let upload = try fixture.curl(
            daemon, ["-o", "/dev/null", "-H", "Transfer-Encoding: chunked", "--data-binary", body, base + "/echo"])
        let download = try fixture.curl(daemon, [base + "/chunked?n=3"])
        #expect(upload.status == 0 && download.status == 0, "\(upload.standardError) \(download.standardError)")
        #expect(download.standardOutput == "chunk 0\nchunk 1\nchunk 2\n")
        let requests = daemon.lines("request", atLeast: 2)
        try #require(requests.count == 2, "\(requests)")
        // The bodies' own bytes, without the chunked framing (docs/request-log.md).
        #expect(requests[0]["request_body_bytes"] as? Int == body.utf8.count, "\(requests[0])")
        #expect(requests[1]["response_body_bytes"] as? Int == 24, "\(requests[1])")
        #expect(daemon.terminate() == 0)
    }

    @Test(
        "--log-headers on: headers logged, Authorization, Cookie and Set-Cookie redacted; with --log-secrets on, not",
        arguments: [false, true])
    func headers(secrets: Bool) throws {
        let host = "headers.intercept.test"
        let fixture = try InterceptFixture(names: [host])
        try fixture.leaf("leaf", for: [host])
        let nginx = try TestNginx(
            directory: fixture.directory, certificates: ["leaf"],
            locations:
                "location = /cookie { add_header Set-Cookie \"sid=s3cret\"; add_header X-Plain visible; return 200 \"c\\n\"; }"
        )
        let daemon = try fixture.daemon(["--log-headers", "on"] + (secrets ? ["--log-secrets", "on"] : []))
        let curl = try fixture.curl(
            daemon,
            [
                "-H", "Authorization: Bearer t0ken", "-H", "Cookie: session=abc", "-H", "X-Test: shown",
                "https://\(host):\(nginx.ports[0])/cookie",
            ])
        #expect(curl.status == 0 && curl.standardOutput == "c\n", "\(curl.standardError)")
        let line = try #require(daemon.lines("request", atLeast: 1).first)
        let sent = line["request_headers"]
        let received = line["response_headers"]
        #expect(headerValue(sent, "X-Test") == "shown", "\(line)")
        #expect(headerValue(sent, "Host") == "\(host):\(nginx.ports[0])", "\(line)")
        #expect(headerValue(received, "X-Plain") == "visible", "\(line)")
        #expect(headerValue(sent, "Authorization") == (secrets ? "Bearer t0ken" : "[redacted]"), "\(line)")
        #expect(headerValue(sent, "Cookie") == (secrets ? "session=abc" : "[redacted]"), "\(line)")
        #expect(headerValue(received, "Set-Cookie") == (secrets ? "sid=s3cret" : "[redacted]"), "\(line)")
        #expect(daemon.terminate() == 0)
    }

    @Test("without --log-headers: request_headers and response_headers are null")
    func noHeaders() throws {
        let host = "quiet.intercept.test"
        let fixture = try InterceptFixture(names: [host])
        try fixture.leaf("leaf", for: [host])
        let server = try TestTLSServer(directory: fixture.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let daemon = try fixture.daemon()
        let curl = try fixture.curl(
            daemon, ["-o", "/dev/null", "-H", "Authorization: Bearer t0ken", "https://\(host):\(server.port)/"])
        #expect(curl.status == 0, "\(curl.standardError)")
        let line = try #require(daemon.lines("request", atLeast: 1).first)
        #expect(line["request_headers"] is NSNull && line["response_headers"] is NSNull, "\(line)")
        #expect(daemon.terminate() == 0)
    }

    // MARK: - Blocking

    /// A fixture and an s_server with an expired leaf for `host`.
    static func expiredServer(_ host: String) throws -> (InterceptFixture, TestTLSServer) {
        let fixture = try InterceptFixture(names: [host])
        let arguments = try NonCompliantServer.expired.serverArguments(fixture.factory, hostName: host)
        return (fixture, try TestTLSServer(directory: fixture.directory, arguments))
    }

    @Test(
        "enforce, --block-style abort: curl fails the handshake (exit 35), the line says blocked and names the violation"
    )
    func blockedAbort() throws {
        let host = "abort.intercept.test"
        let (fixture, server) = try Self.expiredServer(host)
        let daemon = try fixture.daemon(["--block-style", "abort"])
        let curl = try fixture.curl(daemon, ["https://\(host):\(server.port)/"])
        #expect(curl.status == 35, "\(curl.standardError)")
        #expect(curl.standardError.contains("handshake failure"), "\(curl.standardError)")
        let line = try #require(daemon.lines("connection", atLeast: 1).first)
        #expect(line.action == "blocked" && line.compliant == false && line.violationNames == ["expired"], "\(line)")
        #expect(daemon.lines("request", atLeast: 0).isEmpty)
        #expect(daemon.terminate() == 0)
    }

    @Test(
        "enforce, --block-style page: 403 with X-ATS-Violations, HTML for Accept: text/html and text otherwise; the request line has 403"
    )
    func blockedPage() throws {
        let host = "page.intercept.test"
        let (fixture, server) = try Self.expiredServer(host)
        let daemon = try fixture.daemon(["--block-style", "page"])
        let url = "https://\(host):\(server.port)/"
        let html = try fixture.curl(daemon, ["-i", "--suppress-connect-headers", "-H", "Accept: text/html", url])
        let text = try fixture.curl(daemon, ["-i", "--suppress-connect-headers", "-H", "Accept: */*", url])
        for (result, isHTML) in [(html, true), (text, false)] {
            let response = result.standardOutput
            #expect(result.status == 0, "\(result.standardError)")
            #expect(response.hasPrefix("HTTP/1.1 403"), "\(response)")
            let head = response.components(separatedBy: "\r\n\r\n").first ?? ""
            let body = response.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
            #expect(head.lowercased().contains("x-ats-violations: expired"), "\(head)")
            #expect(head.lowercased().contains("x-ats-error:"), "\(head)")
            #expect(
                head.lowercased().contains(isHTML ? "content-type: text/html" : "content-type: text/plain"), "\(head)")
            #expect(body.contains("<html") == isHTML, "\(body)")
            #expect(body.contains("expired"), "\(body)")
        }
        let requests = daemon.lines("request", atLeast: 2)
        #expect(requests.map { $0["status"] as? Int } == [403, 403], "\(requests)")
        #expect(requests.allSatisfy { $0.action == "blocked" && $0.violationNames == ["expired"] }, "\(requests)")
        let connections = daemon.lines("connection", atLeast: 2)
        #expect(
            connections.allSatisfy { $0.action == "blocked" && $0["inspect"] as? String == "intercept" },
            "\(connections)")
        #expect(daemon.terminate() == 0)
    }

    @Test(
        "a TLS 1.0-only upstream refuses the proxy's handshake in enforce mode: the probe path explains it, and the device's handshake gets an alert"
    )
    func refusedUpstreamHandshake() throws {
        let host = "legacy.intercept.test"
        let fixture = try InterceptFixture(names: [host])
        let arguments = try NonCompliantServer.tls10Only.serverArguments(fixture.factory, hostName: host)
        let server = try TestTLSServer(directory: fixture.directory, arguments)
        let daemon = try fixture.daemon()
        // curl trusting the origin's root and speaking TLS 1.0: only a relayed origin could satisfy it.
        let curl = try fixture.curl(
            daemon, ["--tlsv1.0", "--ciphers", "DEFAULT:@SECLEVEL=0", "https://\(host):\(server.port)/"],
            trust: fixture.factory.path("root.pem"))
        let line = try #require(daemon.lines("connection", atLeast: 1).first)
        #expect(line["inspect"] as? String == "passthrough", "\(line)")
        #expect(line.compliant == false && line.violationNames == ["tls_version"], "\(line)")
        #expect(curl.status == 35, "\(curl.standardError)")
        #expect(line.action == "blocked", "\(line)")
        #expect(daemon.lines("request", atLeast: 0).isEmpty)
        #expect(daemon.terminate() == 0)
    }

    @Test(
        "report mode intercepts a host whose TLS the ATS handshake refuses: a permissive upstream handshake carries the requests, and the verdict keeps the refusal"
    )
    func refusedUpstreamHandshakeReported() throws {
        let host = "legacy.intercept.test"
        let fixture = try InterceptFixture(names: [host])
        let arguments = try NonCompliantServer.tls10Only.serverArguments(fixture.factory, hostName: host)
        let server = try TestTLSServer(directory: fixture.directory, arguments)
        let daemon = try fixture.daemon(["--mode", "report"])
        // curl trusting only the atsproxy CA, speaking TLS 1.2-1.3 to the proxy: intercepted.
        let curl = try fixture.curl(daemon, ["https://\(host):\(server.port)/report-me"])
        #expect(curl.status == 0 && curl.standardOutput.contains("s_server"), "\(curl.standardError)")
        let line = try #require(daemon.lines("connection", atLeast: 1).first)
        #expect(line["inspect"] as? String == "intercept", "\(line)")
        #expect(line.action == "allowed", "\(line)")
        #expect(line.compliant == false && line.violationNames == ["tls_version"], "\(line)")
        #expect((line["tls"] as? [String: Any])?["version"] as? String == "TLSv1.0", "\(line)")
        let requests = daemon.lines("request", atLeast: 1)
        #expect(requests.count == 1, "\(requests)")
        #expect((requests.first?["url"] as? String)?.hasSuffix("/report-me") == true, "\(requests)")
        #expect(daemon.terminate() == 0)
    }

    @Test("--mode report: a non-compliant server's response reaches curl, logged non-compliant and allowed")
    func reportMode() throws {
        let host = "report.intercept.test"
        let (fixture, server) = try Self.expiredServer(host)
        let daemon = try fixture.daemon(["--mode", "report"])
        let curl = try fixture.curl(daemon, ["https://\(host):\(server.port)/"])
        #expect(curl.status == 0 && curl.standardOutput.contains("s_server"), "\(curl.standardError)")
        let line = try #require(daemon.lines("connection", atLeast: 1).first)
        #expect(line.action == "allowed" && line.compliant == false && line.violationNames == ["expired"], "\(line)")
        let request = try #require(daemon.lines("request", atLeast: 1).first)
        #expect(request["status"] as? Int == 200 && request.compliant == false, "\(request)")
        #expect(daemon.terminate() == 0)
    }
}
