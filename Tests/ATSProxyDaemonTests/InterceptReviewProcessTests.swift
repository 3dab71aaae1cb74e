import Foundation
import TLSTestSupport
import Testing

/// Intercept mode driven by a scripted TLS client (Python's ssl through the daemon's CONNECT): the
/// request written in pieces with pauses, and the end of the device's session as the client sees
/// it (close_notify or a truncation).
@Suite("Intercept mode, scripted clients", .startsProcesses(timeLimit: .seconds(60)))
struct InterceptReviewProcessTests {
    /// Connects through `daemon` to `host:port`, trusting the interception CA, writes `pieces` one
    /// TLS record each 0.3 s apart (the scenario: a device that writes its request in pieces), and
    /// reads until the session ends: the output starts with "END clean", "END truncated" or
    /// "END timeout" (10 s of silence), then what was read. A piece "@end" reads until the session
    /// ends there, prints the same, and goes on with the next pieces (a send that fails ends them).
    /// (With no daemon, straight to the server at 127.0.0.1:`port`, trusting the test root.)
    static func scriptedClient(
        _ fixture: InterceptFixture, _ daemon: DaemonProcess?, host: String, port: UInt16, _ pieces: [String]
    )
        throws -> CommandResult
    {
        let path = fixture.factory.path("client.py")
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        return try runCommand(
            "/usr/bin/python3",
            [
                "-u", path, String(daemon?.port ?? 0), host, String(port),
                daemon == nil ? fixture.factory.path("root.pem") : fixture.caPEM,
            ] + pieces, timeLimit: 30)
    }

    static let script = #"""
        import socket, ssl, sys, time
        proxy, host, port, cafile = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
        raw = socket.create_connection(("127.0.0.1", proxy or port), timeout=10)
        if proxy:
            raw.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
            head = b""
            while b"\r\n\r\n" not in head:
                head += raw.recv(1)
        context = ssl.create_default_context(cafile=cafile)
        context.options &= ~ssl.OP_IGNORE_UNEXPECTED_EOF  # A truncation is an error, told apart from close_notify.
        tls = context.wrap_socket(raw, server_hostname=host, suppress_ragged_eofs=False)

        def read_to_end():
            data = b""
            try:
                while True:
                    chunk = tls.recv(65536)
                    if not chunk:
                        print("END clean")
                        break
                    data += chunk
            except (ssl.SSLEOFError, ssl.SSLError) as error:
                print("END truncated" if "EOF" in str(error) else f"END error {error}")
            except socket.timeout:
                print("END timeout")
            except OSError as error:
                print(f"END error {error}")
            sys.stdout.write(data.decode("latin-1"))

        for piece in sys.argv[5:]:
            if piece == "@end":
                read_to_end()
                continue
            try:
                tls.sendall(piece.replace("\\r", "\r").replace("\\n", "\n").encode())
            except OSError as error:
                print(f"SEND failed {error}")
                break
            time.sleep(0.3)  # The scenario: the next piece comes apart, in a TLS record of its own.
        read_to_end()
        """#

    @Test("a request head that comes in two TLS records, apart: answered, one request line")
    func headInTwoRecords() throws {
        let host = "split.intercept.test"
        let fixture = try InterceptFixture(names: [host])
        try fixture.leaf("leaf", for: [host])
        let origin = try TestHTTPOrigin(
            directory: fixture.directory, certificate: fixture.factory.path("leaf.pem"),
            key: fixture.factory.path("leaf.key"))
        let daemon = try fixture.daemon()
        let result = try Self.scriptedClient(
            fixture, daemon, host: host, port: origin.port,
            [
                "GET /split HTTP/1.1\\r\\nHost: \(host):\(origin.port)\\r\\n", "Connection: close\\r\\n\\r\\n",
            ])
        #expect(
            result.standardOutput.contains("hello from the origin, /split"),
            "\(result.standardOutput) \(result.standardError)")
        let requests = daemon.lines("request", atLeast: 1)
        #expect(requests.map { $0["status"] as? Int } == [200], "\(requests)")
        #expect(daemon.terminate() == 0)
    }

    @Test(
        "the origin closes its kept-alive connection while the device is idle: the device's connection ends too, and its next request gets no 502"
    )
    func originClosesBetweenRequests() throws {
        let host = "keepalive.intercept.test"
        let fixture = try InterceptFixture(names: [host])
        try fixture.leaf("leaf", for: [host])
        let nginx = try TestNginx(
            directory: fixture.directory, certificates: ["leaf"],
            locations: "location = /short { keepalive_timeout 1s; return 200 \"short\\n\"; }")
        let daemon = try fixture.daemon()
        let request = "GET /short HTTP/1.1\\r\\nHost: \(host):\(nginx.ports[0])\\r\\n\\r\\n"
        // The device stays idle until its connection ends (nginx closes its side after 1 s), then
        // sends its next request on it.
        let result = try Self.scriptedClient(
            fixture, daemon, host: host, port: nginx.ports[0], [request, "@end", request])
        #expect(result.standardOutput.contains("short"), "\(result.standardOutput) \(result.standardError)")
        #expect(
            !result.standardOutput.contains("END timeout"),
            "the device's connection did not end: \(result.standardOutput)")
        #expect(!result.standardOutput.contains("502"), "\(result.standardOutput)")
        let requests = daemon.lines("request", atLeast: 1)
        #expect(requests.map { $0["status"] as? Int } == [200], "\(requests)")
        #expect(daemon.terminate() == 0)
    }

    @Test(
        "request_head_bytes and response_head_bytes are the heads as received (docs/request-log.md), not as forwarded with Via"
    )
    func headBytesAsReceived() throws {
        let host = "heads.intercept.test"
        let fixture = try InterceptFixture(names: [host])
        try fixture.leaf("leaf", for: [host])
        let nginx = try TestNginx(directory: fixture.directory, certificates: ["leaf"])
        let daemon = try fixture.daemon()
        // The Host names the port, as clients write it: a request for another authority is refused.
        let head =
            "GET / HTTP/1.1\r\nHost: \(host):\(nginx.ports[0])\r\nKeep-Alive: timeout=5\r\nConnection: close\r\n\r\n"
        let piece = head.replacingOccurrences(of: "\r", with: "\\r").replacingOccurrences(of: "\n", with: "\\n")
        let direct = try Self.scriptedClient(fixture, nil, host: host, port: nginx.ports[0], [piece])
        let originHead = try #require(
            direct.standardOutput.components(separatedBy: "\r\n\r\n").first, "\(direct.standardError)")
        // Less the "END …" line the script prints first.
        let originHeadBytes =
            originHead.utf8.count + 4 - (originHead.split(separator: "\n", maxSplits: 1).first!.utf8.count + 1)
        let proxied = try Self.scriptedClient(fixture, daemon, host: host, port: nginx.ports[0], [piece])
        #expect(proxied.standardOutput.contains("HTTP/1.1 200"), "\(proxied.standardOutput) \(proxied.standardError)")
        let line = try #require(daemon.lines("request", atLeast: 1).first)
        #expect(line["request_head_bytes"] as? Int == head.utf8.count, "\(line)")
        // The proxy keeps its origin connection (Connection is hop-by-hop), so nginx answered it
        // "Connection: keep-alive" where it told the direct client "Connection: close".
        #expect(
            line["response_head_bytes"] as? Int == originHeadBytes + "keep-alive".count - "close".count,
            "\(line) \(direct.standardOutput)")
        #expect(daemon.terminate() == 0)
    }
}
