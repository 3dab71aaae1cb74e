import Foundation
import TLSTestSupport
import Testing

/// What an intercepted connection carries besides plain HTTP requests: a request that upgrades
/// (a WebSocket: the 101 is passed on, then the new protocol's bytes both ways, counted on the
/// request's line) and a protocol of the app's own over TLS (relayed as it comes, one `tls_stream`
/// line). The upstream is a Python TLS server that answers the upgrade, then shouts back what it
/// gets (upper case), or reverses each line; the device is a Python client through the CONNECT.
@Suite("Intercept mode: upgrades and non-HTTP streams", .startsProcesses(timeLimit: .seconds(60)))
struct InterceptStreamProcessTests {
    static let server = #"""
        import socket, ssl, sys, base64, hashlib, threading
        certificate, key = sys.argv[1], sys.argv[2]
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certificate, key)
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        print("PORT", listener.getsockname()[1], flush=True)

        def serve(raw):
            try:
                conn = context.wrap_socket(raw, server_side=True)
                first = conn.recv(65536)
                if first.startswith(b"GET "):
                    head = first
                    while b"\r\n\r\n" not in head:
                        head += conn.recv(65536)
                    key = [l.split(b":", 1)[1].strip() for l in head.split(b"\r\n") if l.lower().startswith(b"sec-websocket-key")][0]
                    accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
                    conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                 b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\nHELLO")
                    while True:
                        data = conn.recv(65536)
                        if not data:
                            break
                        conn.sendall(data.upper())
                else:
                    data = first
                    while data:
                        conn.sendall(data[::-1])
                        data = conn.recv(65536)
                conn.close()
            except Exception as error:
                print("server error", error, flush=True)

        while True:
            raw, _ = listener.accept()
            threading.Thread(target=serve, args=(raw,), daemon=True).start()
        """#

    static let client = #"""
        import socket, ssl, sys
        proxy, host, port, ca, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
        raw = socket.create_connection(("127.0.0.1", proxy), timeout=20)
        raw.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        reply = b""
        while b"\r\n\r\n" not in reply:
            reply += raw.recv(1)
        context = ssl.create_default_context(cafile=ca)
        conn = context.wrap_socket(raw, server_hostname=host)
        def read_until(marker):
            data = b""
            while marker not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
            return data
        if mode == "websocket":
            conn.sendall(f"GET /chat HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
            head = read_until(b"HELLO")
            print(head.split(b"\r\n")[0].decode())
            conn.sendall(b"frame one")
            print(read_until(b"FRAME ONE").decode())
        else:
            conn.sendall(b"\x00\x01binary protocol\n")
            print(read_until(b"\x01\x00").hex())
        conn.close()
        """#

    /// The daemon, the upstream, and the client's output for `mode` (websocket or stream).
    static func run(_ mode: String) throws -> (
        output: CommandResult, lines: [[String: Any]], connection: [String: Any]?
    ) {
        let host = "stream.intercept.test"
        let fixture = try InterceptFixture(names: [host])
        try fixture.leaf("leaf", for: [host])
        try server.write(toFile: fixture.factory.path("server.py"), atomically: true, encoding: .utf8)
        try client.write(toFile: fixture.factory.path("client.py"), atomically: true, encoding: .utf8)
        let server = try TestScriptServer(
            interpreter: "/usr/bin/python3",
            [
                "-u", fixture.factory.path("server.py"), fixture.factory.path("leaf.pem"),
                fixture.factory.path("leaf.key"),
            ],
            output: fixture.factory.path("server.log"), name: "the stream server")
        let port = server.port
        defer { withExtendedLifetime(server) {} }  // Killed when the test ends, not after its last use.
        let daemon = try fixture.daemon()
        let output = try runCommand(
            "/usr/bin/python3",
            [fixture.factory.path("client.py"), "\(daemon.port)", host, "\(port)", fixture.caPEM, mode],
            input: Data(), timeLimit: 30)
        let kind = mode == "websocket" ? "request" : "tls_stream"
        let lines = daemon.lines(kind, atLeast: 1)
        let connection = daemon.lines("connection", atLeast: 1).first
        _ = daemon.terminate()
        return (output, lines, connection)
    }

    @Test(
        "a WebSocket upgrade: the 101 reaches the device, frames go both ways, the request line records the upgrade and counts them"
    )
    func webSocket() throws {
        let (output, lines, connection) = try Self.run("websocket")
        #expect(output.status == 0, "\(output.standardError)")
        #expect(output.standardOutput == "HTTP/1.1 101 Switching Protocols\nFRAME ONE\n", "\(output.standardOutput)")
        let line = try #require(lines.first)
        #expect(line["status"] as? Int == 101 && line["upgrade"] as? String == "websocket", "\(line)")
        #expect(line["request_body_bytes"] as? Int == 9, "the frame sent after the upgrade: \(line)")
        #expect(line["response_body_bytes"] as? Int == 14, "HELLO and the echoed frame: \(line)")
        #expect(connection?["requests"] as? Int == 1)
    }

    @Test(
        "a protocol of the app's own over TLS: relayed both ways as it comes, one tls_stream line with the bytes each way"
    )
    func nonHTTPStream() throws {
        let (output, lines, connection) = try Self.run("stream")
        #expect(output.status == 0, "\(output.standardError)")
        // The server reverses what it gets: "\0\1binary protocol\n" comes back backwards.
        let sent: [UInt8] = [0, 1] + Array("binary protocol\n".utf8)
        #expect(output.standardOutput == sent.reversed().map { String(format: "%02x", $0) }.joined() + "\n")
        let line = try #require(lines.first)
        #expect(line["method"] is NSNull && line["url"] is NSNull, "\(line)")
        #expect(
            line["request_body_bytes"] as? Int == sent.count && line["response_body_bytes"] as? Int == sent.count,
            "\(line)")
        #expect(connection?["inspect"] as? String == "intercept")
    }
}
