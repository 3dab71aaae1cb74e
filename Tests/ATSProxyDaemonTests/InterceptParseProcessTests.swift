import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// Issue 27, items 3 and 6, end to end: a real TLS device (Python's ssl, negotiating ALPN
/// `http/1.1` as URLSession does) sends the review's malformed first requests, and requests naming
/// another authority, through the daemon to a lenient origin of the test's own that takes anything
/// ending in a blank line as a request and records every byte it receives.
@Suite("Intercept mode: HTTP throughout, one authority", .startsProcesses(timeLimit: .seconds(180)))
struct InterceptParseProcessTests {
    static let host = "parse.intercept.test"

    /// Lenient as the review's origin was: whatever ends in a blank line is answered with a 200, and
    /// every byte received is appended to the record file.
    static let origin = #"""
        import socket, ssl, sys, threading
        certificate, key, record = sys.argv[1], sys.argv[2], sys.argv[3]
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certificate, key)
        # An HTTP/1.1 server: it answers an ALPN offer of http/1.1 (the proxy offers the device's).
        context.set_alpn_protocols(["http/1.1"])
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        print("PORT", listener.getsockname()[1], flush=True)
        lock = threading.Lock()

        def serve(raw):
            try:
                conn = context.wrap_socket(raw, server_side=True)
                pending = b""
                while True:
                    data = conn.recv(65536)
                    if not data:
                        break
                    with lock, open(record, "ab") as out:
                        out.write(data)
                    pending += data
                    while b"\n\n" in pending or b"\n\r\n" in pending:
                        ends = [i for i in (pending.find(b"\n\n"), pending.find(b"\n\r\n")) if i >= 0]
                        cut = min(ends)
                        pending = pending[cut + (2 if pending[cut + 1:cut + 2] == b"\n" else 3):]
                        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nlenient")
                conn.close()
            except Exception as error:
                print("origin error", error, flush=True)

        while True:
            raw, _ = listener.accept()
            threading.Thread(target=serve, args=(raw,), daemon=True).start()
        """#

    /// The device: CONNECT, TLS with the CA trusted and ALPN `http/1.1` unless told "none", the
    /// request's exact bytes (hex), then everything until the proxy closes (or the origin's answer
    /// came); prints the ALPN chosen and the answer's status line.
    static let device = #"""
        import socket, ssl, sys
        proxy, host, port, ca, payload, alpn = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], bytes.fromhex(sys.argv[5]), sys.argv[6]
        raw = socket.create_connection(("127.0.0.1", proxy), timeout=20)
        raw.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        reply = b""
        while b"\r\n\r\n" not in reply:
            reply += raw.recv(1)
        context = ssl.create_default_context(cafile=ca)
        if alpn != "none":
            context.set_alpn_protocols([alpn])
        conn = context.wrap_socket(raw, server_hostname=host)
        print("ALPN", conn.selected_alpn_protocol())
        conn.sendall(payload)
        answer = b""
        while True:
            try:
                chunk = conn.recv(65536)
            except (ssl.SSLError, OSError):
                break
            if not chunk:
                break
            answer += chunk
            if answer.endswith(b"lenient"):
                break  # the origin's answer, relayed: a stream the proxy does not end
        print(answer.split(b"\r\n")[0].decode("latin-1"))
        """#

    /// The daemon, the lenient origin and the scripts, for one test.
    final class Rig {
        let fixture: InterceptFixture
        let daemon: DaemonProcess
        let originPort: UInt16
        private let originProcess: Process
        var record: String { fixture.factory.path("origin-received.bin") }
        var authority: String { "\(InterceptParseProcessTests.host):\(originPort)" }

        init() throws {
            fixture = try InterceptFixture(names: [InterceptParseProcessTests.host])
            try fixture.leaf("leaf", for: [InterceptParseProcessTests.host])
            try InterceptParseProcessTests.origin.write(
                toFile: fixture.factory.path("origin.py"), atomically: true, encoding: .utf8)
            try InterceptParseProcessTests.device.write(
                toFile: fixture.factory.path("device.py"), atomically: true, encoding: .utf8)
            originProcess = Process()
            originProcess.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            originProcess.arguments = [
                "-u", fixture.factory.path("origin.py"), fixture.factory.path("leaf.pem"),
                fixture.factory.path("leaf.key"), fixture.factory.path("origin-received.bin"),
            ]
            originPort = try ProcessLaunch.start(
                originProcess, outputPath: fixture.factory.path("origin.log"), name: "the lenient origin", timeout: 10
            ) {
                ProcessLaunch.port(after: "PORT ", in: $0)
            }
            daemon = try fixture.daemon()
        }

        deinit {
            kill(originProcess.processIdentifier, SIGKILL)
            originProcess.waitForExit()
        }

        /// One device connection sending `bytes`: its ALPN and the answer's status line.
        func send(_ bytes: [UInt8], alpn: String = "http/1.1") throws -> (alpn: String, statusLine: String) {
            let hex = bytes.map { String(format: "%02x", $0) }.joined()
            let result = try runCommand(
                PrometheusScrape.python,
                [
                    fixture.factory.path("device.py"), "\(daemon.port)", InterceptParseProcessTests.host,
                    "\(originPort)", fixture.caPEM, hex, alpn,
                ], input: Data(), timeLimit: 30)
            let lines = result.standardOutput.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            guard result.status == 0, lines.count >= 2 else {
                throw FixtureError(message: "the device: \(result.standardOutput) \(result.standardError)")
            }
            return (String(lines[0].dropFirst("ALPN ".count)), lines[1])
        }

        /// What the origin has received, as text (bytes that are not UTF-8 replaced).
        var received: String {
            String(decoding: FileManager.default.contents(atPath: record) ?? Data(), as: UTF8.self)
        }

        /// The log's `count`-th line of `kind`, once it is written.
        func requestLine(number count: Int, kind: String = "request") -> [String: Any]? {
            let lines = daemon.lines(kind, atLeast: count)
            return lines.count >= count ? lines[count - 1] : nil
        }
    }

    /// A first request the lenient origin took, tagged with its number so the origin's record shows
    /// whether it arrived: the status the daemon answers it with (200: the lenient origin's).
    static func forms(host: String) -> [(name: String, bytes: [UInt8], status: Int)] {
        let rest = "Host: \(host)\r\nConnection: close\r\n\r\n"
        func text(_ line: String) -> [UInt8] { Array((line + "\r\n" + rest).utf8) }
        return [
            ("a leading CRLF", Array("\r\n".utf8) + text("GET /form-1 HTTP/1.1"), 200),
            ("a leading LF", Array("\n".utf8) + text("GET /form-2 HTTP/1.1"), 200),
            ("two spaces after the method", text("GET  /form-3 HTTP/1.1"), 400),
            ("two spaces before the version", text("GET /form-4  HTTP/1.1"), 400),
            ("a tab after the method", text("GET\t/form-5 HTTP/1.1"), 400),
            ("a tab before the version", text("GET /form-6\tHTTP/1.1"), 400),
            ("a 33-byte method", text(String(repeating: "G", count: 33) + " /form-7 HTTP/1.1"), 501),
            ("HTTP/1.2", text("GET /form-8 HTTP/1.2"), 505),
            ("lower-case http/1.1", text("GET /form-9 http/1.1"), 400),
            ("HTTP/1.32", text("GET /form-10 HTTP/1.32"), 505),
            ("a NUL method", [0] + text(" /form-11 HTTP/1.1"), 400),
            ("a leading space", text(" GET /form-12 HTTP/1.1"), 400),
            ("a space after the version", text("GET /form-13 HTTP/1.1 "), 400),
            // Faults after a whole request line: refused, but the line names the request.
            ("a header line without a colon", text("GET /form-14 HTTP/1.1\r\nAccept json"), 400),
            (
                "101 header lines",
                text("GET /form-15 HTTP/1.1" + String(repeating: "\r\nX-Filler: y", count: 101)), 431
            ),
        ]
    }

    /// The forms whose request line was read whole: their lines name the request's URL.
    static let namedForms = [1, 2, 14, 15]

    @Test(
        "ALPN http/1.1: each malformed first request gets its status and a request line, and not a byte of it reaches the origin"
    )
    func malformedFirstRequests() throws {
        let rig = try Rig()
        for (index, form) in Self.forms(host: rig.authority).enumerated() {
            let number = index + 1
            let (alpn, statusLine) = try rig.send(form.bytes)
            #expect(alpn == "http/1.1", "\(form.name)")
            #expect(statusLine.hasPrefix("HTTP/1.1 \(form.status) "), "\(form.name): \(statusLine)")
            let line = try #require(rig.requestLine(number: number), "\(form.name): no request line")
            #expect(line["kind"] as? String == "request", "\(form.name): \(line)")
            #expect(line["status"] as? Int == form.status, "\(form.name): \(line)")
            let url = Self.namedForms.contains(number) ? "https://\(rig.authority)/form-\(number)" : nil
            #expect(line["url"] as? String == url, "\(form.name): \(line)")
            if form.status != 200 {
                let error = line["upstream_error"] as? String
                #expect(error?.hasPrefix("bad request: ") == true, "\(form.name): \(line)")
            }
        }
        // Only the two requests it was right to forward reached the origin; of the rest, nothing.
        let received = rig.received
        #expect(received.contains("GET /form-1 HTTP/1.1\r\n") && received.contains("GET /form-2 HTTP/1.1\r\n"))
        for number in 3...15 {
            #expect(!received.contains("/form-\(number) "), "form \(number) reached the origin: \(received)")
        }
        #expect(rig.daemon.lines("request", atLeast: 15).allSatisfy { $0["kind"] as? String == "request" })
        // The HAR has every request whose line names one, refused or not.
        let har = atsproxyctl("har", rig.daemon.logPath)
        #expect(har.exitCode == 0, "\(har.standardError)")
        let entries = jsonValue(jsonObject(har.standardOutput), "log", "entries") as? [[String: Any]] ?? []
        let urls = entries.compactMap { jsonValue($0, "request", "url") as? String }
        #expect(urls == Self.namedForms.map { "https://\(rig.authority)/form-\($0)" }, "\(urls)")
        #expect(rig.daemon.terminate() == 0)
    }

    @Test("no ALPN: a first byte no request begins with is another protocol, relayed as a tls_stream")
    func otherProtocolWithoutALPN() throws {
        let rig = try Rig()
        let bytes: [UInt8] = [0, 1] + Array("binary protocol\n\n".utf8)
        let (alpn, _) = try rig.send(bytes, alpn: "none")
        #expect(alpn == "None")
        let line = try #require(rig.requestLine(number: 1, kind: "tls_stream"))
        #expect(line["request_body_bytes"] as? Int == bytes.count, "\(line)")
        #expect(rig.received.contains("binary protocol"), "relayed to the origin as it came")
        #expect(rig.daemon.lines("request", atLeast: 0).isEmpty)
        #expect(rig.daemon.terminate() == 0)
    }

    @Test(
        "a Host or absolute-form target naming another server gets a 400 and goes nowhere; the line and the HAR name the connection's authority"
    )
    func foreignAuthority() throws {
        let rig = try Rig()
        let own = rig.authority
        let close = "Connection: close\r\n\r\n"
        let requests: [(request: String, status: Int)] = [
            ("GET /fronted HTTP/1.1\r\nHost: evil.example\r\n" + close, 400),
            ("GET http://evil.example/absolute HTTP/1.1\r\nHost: \(own)\r\n" + close, 400),
            ("GET /matching HTTP/1.1\r\nHost: \(own.uppercased())\r\n" + close, 200),
        ]
        let paths = ["/fronted", "/absolute", "/matching"]
        for (number, (request, status)) in requests.enumerated() {
            let (_, statusLine) = try rig.send(Array(request.utf8))
            #expect(statusLine.hasPrefix("HTTP/1.1 \(status) "), "\(request): \(statusLine)")
            let line = try #require(rig.requestLine(number: number + 1))
            #expect(line["status"] as? Int == status, "\(line)")
            #expect(line["url"] as? String == "https://\(own)\(paths[number])", "the judged authority: \(line)")
            #expect(line["host"] as? String == Self.host && line["sni"] as? String == Self.host)
            if status == 400 {
                #expect((line["upstream_error"] as? String)?.contains("evil.example") == true, "\(line)")
            }
        }
        let received = rig.received
        #expect(!received.contains("fronted") && !received.contains("absolute") && !received.contains("evil"))
        #expect(received.contains("GET /matching HTTP/1.1\r\n"), "\(received)")

        let har = atsproxyctl("har", rig.daemon.logPath)
        #expect(har.exitCode == 0, "\(har.standardError)")
        let entries = jsonValue(jsonObject(har.standardOutput), "log", "entries") as? [[String: Any]] ?? []
        let urls = entries.compactMap { jsonValue($0, "request", "url") as? String }
        #expect(urls == paths.map { "https://\(own)\($0)" }, "\(har.standardOutput.prefix(800))")
        #expect(rig.daemon.terminate() == 0)
    }
}
