import Foundation
import TLSTestSupport
import Testing

/// Intercept mode's one deadline, `--handshake-timeout` from the ClientHello, over both handshakes:
/// an upstream that accepts and never answers, and a device that sends its ClientHello and then
/// nothing, are each cut off at the deadline, with the reason logged.
@Suite("Intercept mode: the handshake deadline", .startsProcesses(timeLimit: .seconds(60)))
struct InterceptDeadlineProcessTests {
    @Test("a silent upstream: the device's connection is closed at --handshake-timeout, the line says why")
    func silentUpstream() throws {
        let host = "silent.intercept.test"
        let fixture = try InterceptFixture(names: [host])
        let server = try RawTCPServer { connection in _ = awaitPeerClose(connection, wait: 30) }
        let daemon = try fixture.daemon(["--handshake-timeout", "1"])
        let started = Date()
        let curl = try fixture.curl(daemon, ["https://\(host):\(server.port)/"])
        let elapsed = Date().timeIntervalSince(started)
        #expect(curl.status != 0, "\(curl.standardOutput)")
        #expect(elapsed >= 0.9 && elapsed < 5, "closed after \(elapsed) s")
        let line = try #require(daemon.lines("connection", atLeast: 1).first)
        #expect(line.action == "failed" && line["inspect"] as? String == "intercept", "\(line)")
        #expect(line["upstream_error"] as? String == "upstream did not complete the TLS handshake in 1 s", "\(line)")
        #expect(daemon.terminate() == 0)
        withExtendedLifetime(server) {}
    }

    /// A device that sends a real ClientHello (Python's TLS client over a memory BIO) through the
    /// CONNECT and then stops: the proxy's ServerHello goes unanswered.
    static let stalledClient = #"""
        import socket, ssl, sys, time
        proxy, host, port = int(sys.argv[1]), sys.argv[2], sys.argv[3]
        raw = socket.create_connection(("127.0.0.1", proxy), timeout=20)
        raw.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        reply = b""
        while b"\r\n\r\n" not in reply:
            reply += raw.recv(1)
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname=host)
        try:
            tls.do_handshake()
        except ssl.SSLWantReadError:
            pass
        raw.sendall(outgoing.read())
        started = time.monotonic()
        raw.settimeout(20)
        received = 0
        while True:
            data = raw.recv(65536)
            if not data:
                break
            received += len(data)
        print(f"closed after {time.monotonic() - started:.1f} s, {received} bytes")
        """#

    @Test("a device that stops after its ClientHello: closed at --handshake-timeout, intercept_failed says so")
    func stalledDevice() throws {
        let host = "stalled.intercept.test"
        let fixture = try InterceptFixture(names: [host])
        try fixture.leaf("leaf", for: [host])
        let nginx = try TestNginx(directory: fixture.directory, certificates: ["leaf"])
        try Self.stalledClient.write(toFile: fixture.factory.path("stalled.py"), atomically: true, encoding: .utf8)
        let daemon = try fixture.daemon(["--handshake-timeout", "1"])
        let client = try runCommand(
            "/usr/bin/python3", [fixture.factory.path("stalled.py"), "\(daemon.port)", host, "\(nginx.ports[0])"],
            input: Data(), timeLimit: 30)
        #expect(client.status == 0, "\(client.standardError)")
        // The proxy's ServerHello and certificate came, then the close, about a second in.
        let words = client.standardOutput.split(separator: " ")
        let seconds = words.count > 2 ? Double(words[2]) : nil
        #expect(seconds.map { $0 >= 0.5 && $0 < 5 } == true, "\(client.standardOutput)")
        let line = try #require(daemon.lines("connection", atLeast: 1).first)
        #expect(line["intercept_failed"] as? String == "client_handshake_timeout", "\(line)")
        #expect(
            (line["upstream_error"] as? String)?.contains("did not complete its TLS handshake in 1 s") == true,
            "\(line)")
        #expect(daemon.terminate() == 0)
    }
}
