import Foundation
import TLSTestSupport
import Testing

/// Issue 27, item 2, end to end: the daemon as a process, an origin of the test's own
/// (``TestHTTPOrigin``'s `/cut`, `/stall-body`) that sends exactly a head and part of a body, then
/// resets, ends without close_notify, or goes silent. A client must never take the part for the
/// whole: curl (plain mode) and Python's ssl (intercept mode, ragged ends not suppressed) see a
/// reset after the bytes relayed, where the origin's own clean close still reaches them as one.
@Suite("A cut-off response, end to end", .startsProcesses(timeLimit: .seconds(60)))
struct TruncationProcessTests {
    /// The daemon's idle timeout: short, so that a silent origin is cut within the test.
    static let idleTimeout = "2"

    /// What the origin does, and what the client and the line must then say.
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var path: String
        var bodyBytes: Int
        /// Whether the client's connection must end with a reset (else a clean close).
        var reset: Bool
        /// The start of the line's `upstream_error` (nil: no failure at all).
        var sentence: String?
        var testDescription: String { name }
    }

    static let plainCases = [
        Case(
            name: "the origin resets mid-body (a body that runs until the close)", path: "/cut?how=reset",
            bodyBytes: 1200, reset: true,
            sentence: "the response was cut off after 1200 body bytes: the origin reset the connection"),
        Case(
            name: "the origin goes silent mid-body: the idle timeout cuts it", path: "/stall-body?seconds=30",
            bodyBytes: 100, reset: true,
            sentence:
                "the response was cut off after 100 body bytes of 1000 (its Content-Length): closed: idle for \(idleTimeout) s"
        ),
        Case(
            name: "control: the origin's FIN ends a body that runs until the close", path: "/cut?how=clean",
            bodyBytes: 1200, reset: false, sentence: nil),
    ]

    static let interceptCases = [
        Case(
            name: "the origin resets mid-body (a body that runs until the close)", path: "/cut?how=reset",
            bodyBytes: 1200, reset: true,
            sentence: "the response was cut off after 1200 body bytes: the origin reset the connection"),
        Case(
            name: "the origin's FIN without close_notify mid-body", path: "/cut?how=fin", bodyBytes: 1200, reset: true,
            sentence:
                "the response was cut off after 1200 body bytes: the origin ended its TLS session without close_notify"),
        Case(
            name: "the origin goes silent mid-body: the idle timeout cuts it", path: "/stall-body?seconds=30",
            bodyBytes: 100, reset: true,
            sentence:
                "the response was cut off after 100 body bytes of 1000 (its Content-Length): closed: idle for \(idleTimeout) s"
        ),
        Case(
            name: "control: the origin's close_notify ends a body that runs until the close", path: "/cut?how=clean",
            bodyBytes: 1200, reset: false, sentence: nil),
    ]

    /// `line`'s failure and sentence as `expected` says.
    static func expectLine(_ line: [String: Any]?, _ expected: Case, sourceLocation: SourceLocation = #_sourceLocation)
    {
        if let sentence = expected.sentence {
            #expect(
                line?["failure"] as? String == "response_truncated", "\(line ?? [:])", sourceLocation: sourceLocation)
            #expect(
                (line?["upstream_error"] as? String)?.hasPrefix(sentence) == true, "\(line ?? [:])",
                sourceLocation: sourceLocation)
        } else {
            #expect(line?["failure"] is NSNull, "\(line ?? [:])", sourceLocation: sourceLocation)
            #expect(line?["upstream_error"] is NSNull, "\(line ?? [:])", sourceLocation: sourceLocation)
        }
        #expect(line?["status"] as? Int == 200, "\(line ?? [:])", sourceLocation: sourceLocation)
    }

    /// A device in Python: its TLS over memory (`ssl.MemoryBIO`), its socket read by the script, so
    /// that how the connection ended is the socket's own word. Python's `SSLSocket` reports a reset
    /// under `SSL_read` as the same `SSLEOFError` as a FIN without close_notify (3.11, OpenSSL 3).
    /// Prints `END close_notify`, `END fin` (no close_notify), `END reset` (ECONNRESET), `END tls
    /// error …` or `END timeout`, then the response's bytes.
    static func device(_ fixture: InterceptFixture, _ daemon: DaemonProcess, host: String, port: UInt16, path: String)
        throws -> CommandResult
    {
        let script = fixture.factory.path("device.py")
        try deviceScript.write(toFile: script, atomically: true, encoding: .utf8)
        return try runCommand(
            "/usr/bin/python3", ["-u", script, String(daemon.port), host, String(port), fixture.caPEM, path],
            timeLimit: 30)
    }

    static let deviceScript = #"""
        import socket, ssl, sys
        proxy, host, port, cafile, path = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
        raw = socket.create_connection(("127.0.0.1", proxy), timeout=15)
        raw.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += raw.recv(1)
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls = ssl.create_default_context(cafile=cafile).wrap_bio(incoming, outgoing, server_hostname=host)

        def send():
            data = outgoing.read()
            if data:
                raw.sendall(data)

        def receive():
            chunk = raw.recv(65536)  # ConnectionResetError on a reset
            if chunk:
                incoming.write(chunk)
            else:
                incoming.write_eof()
            return bool(chunk)

        while True:
            try:
                tls.do_handshake()
                send()
                break
            except ssl.SSLWantReadError:
                send()
                receive()
        tls.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        send()
        data, end = b"", None
        while end is None:
            try:
                chunk = tls.read(65536)
                if not chunk:
                    end = "close_notify"  # an SSLObject reads close_notify as b""
                data += chunk
                continue
            except ssl.SSLWantReadError:
                pass
            except ssl.SSLError as error:
                end = f"tls error {error}"
                break
            try:
                if not receive():
                    try:
                        end = "fin" if tls.read(65536) else "close_notify"
                    except ssl.SSLError:
                        end = "fin"
            except ConnectionResetError:
                end = "reset"
            except socket.timeout:
                end = "timeout"
        print("END", end)
        sys.stdout.write(data.decode("latin-1"))
        """#

    @Test(
        "plain http://: curl gets the bytes relayed, then a reset (exit 56), or the whole body", arguments: plainCases)
    func plain(_ expected: Case) throws {
        let host = "cut.test"
        let fixture = try InterceptFixture(names: [host])
        try fixture.policy.write(ats: PolicyFile.insecureHTTP(for: host))
        let origin = try TestHTTPOrigin(directory: fixture.directory)
        let daemon = try fixture.daemon(intercept: false, ["--idle-timeout", Self.idleTimeout])
        let result = try runCommand(
            "/usr/bin/curl",
            [
                "-sS", "--max-time", "30", "--proxy", "http://127.0.0.1:\(daemon.port)",
                "http://\(host):\(origin.port)\(expected.path)",
            ])
        #expect(result.standardOutput.utf8.count == expected.bodyBytes, "\(result.standardError)")
        if expected.reset {
            #expect(result.status == 56, "curl: \(result.standardError)")
            #expect(result.standardError.contains("Connection reset by peer"), "\(result.standardError)")
        } else {
            #expect(result.status == 0, "curl: \(result.standardError)")
        }
        Self.expectLine(daemon.lines("connection", atLeast: 1).first, expected)
        #expect(daemon.terminate() == 0)
    }

    @Test(
        "intercept mode: the device gets the bytes relayed, then a reset and no close_notify, or the body and close_notify",
        arguments: interceptCases)
    func intercept(_ expected: Case) throws {
        let host = "cut.intercept.test"
        let fixture = try InterceptFixture(names: [host])
        try fixture.leaf("leaf", for: [host])
        let origin = try TestHTTPOrigin(
            directory: fixture.directory, certificate: fixture.factory.path("leaf.pem"),
            key: fixture.factory.path("leaf.key"))
        let daemon = try fixture.daemon(["--idle-timeout", Self.idleTimeout])
        let result = try Self.device(fixture, daemon, host: host, port: origin.port, path: expected.path)
        let output = result.standardOutput
        let ending = output.prefix { $0 != "\n" }
        #expect(ending == (expected.reset ? "END reset" : "END close_notify"), "\(output) \(result.standardError)")
        let body = output.components(separatedBy: "\r\n\r\n").dropFirst().joined()
        #expect(body.utf8.count == expected.bodyBytes, "\(output)")
        Self.expectLine(daemon.lines("request", atLeast: 1).first, expected)
        let tunnel = daemon.lines("connection", atLeast: 1).first
        if expected.sentence != nil {
            #expect(tunnel?["failure"] as? String == "response_truncated", "\(tunnel ?? [:])")
        } else {
            #expect(tunnel?["failure"] is NSNull, "\(tunnel ?? [:])")
        }
        #expect(daemon.terminate() == 0)
    }
}
