import Foundation

/// A real plain-HTTP/1.1 origin on 127.0.0.1 (Python's http.server, keep-alive), for the proxy's
/// forwarding tests. Stopped when the value goes away.
///
/// - `GET /headers`: the request line and headers as the origin received them, one per line.
/// - `POST /echo`: the request body back (Content-Length or chunked request bodies).
/// - `GET /chunked?n=N`: N chunks of "chunk i\n", chunked.
/// - `GET /close`: a body delimited by the origin closing the connection (no length), closed
///   cleanly: over TLS, close_notify first.
/// - `GET /cut?bytes=N&how=HOW`: exactly `HTTP/1.1 200 OK`, `Content-Type: text/plain` and N bytes of
///   "x" (1200 unless told), a body that runs until the close, then the connection ends as HOW says:
///   `reset` (a TCP reset, SO_LINGER 0), `fin` (closed, over TLS without close_notify: a cut),
///   `clean` (as `/close` ends).
/// - `GET /big?bytes=N`: N bytes of "x" with a Content-Length.
/// - `GET /continue`: a 103 Early Hints response before the final 200.
/// - `GET /random?bytes=N&seed=S`: N seeded random bytes, their SHA-256 in `X-Content-SHA256`.
/// - `POST /digest`: the request body's SHA-256 and length, `<hex> <length>\n`, once all of it is in.
/// - `GET /redirect?to=LOCATION&status=N`: a redirect (301 unless N says otherwise) to LOCATION,
///   percent-decoded.
/// - `GET /loop`: a 302 to itself, for ever.
/// - `GET /stall?seconds=S`: no answer for S seconds.
/// - `GET /stall-body?seconds=S`: a head promising 1000 bytes, 100 of them, then S seconds of silence.
/// - `GET /surplus`: `hello` with a Content-Length of 5 and, in the same write, a second response
///   nobody asked for (`X-Smuggled: yes`, `SPLIT!`); the connection stays open (issue 27).
/// Every response carries `X-Origin-Connection: <n>`, the number of the TCP connection it came on.
package final class TestHTTPOrigin {
    package let port: UInt16
    private let process: Process

    /// With `certificate` and `key` (PEM paths), the origin speaks HTTPS. `host`: the IPv4 address
    /// it listens on; `wrapper` runs it (`ip netns exec NAME`: in a test's network namespace).
    package init(
        directory: String, certificate: String? = nil, key: String? = nil, host: String = "127.0.0.1",
        wrapper: [String] = []
    ) throws {
        let scriptPath = directory + "/origin-\(UUID().uuidString).py"
        try TestHTTPOrigin.script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        process = Process()
        let command = wrapper + ["/usr/bin/python3", "-u", scriptPath, host] + [certificate, key].compactMap(\.self)
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        port = try ProcessLaunch.start(
            process, outputPath: scriptPath + ".log", name: "the test HTTP origin", timeout: 10
        ) {
            ProcessLaunch.port(after: "PORT ", in: $0)
        }
    }

    deinit {
        kill(process.processIdentifier, SIGKILL)
        process.waitForExit()
    }

    static let script = #"""
        import fcntl, http.server, socket, socketserver, struct, sys, itertools, hashlib, random, ssl, termios, time, urllib.parse

        counter = itertools.count(1)

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                self.connection_number = next(counter)

            def log_message(self, *args):
                pass

            def send(self, status, body, extra=()):
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("X-Origin-Connection", str(self.connection_number))
                for name, value in extra:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def end_connection(self, how):
                """Ends the connection now: `clean` (over TLS, close_notify first), `fin` (a close,
                over TLS without close_notify), `reset` (a TCP reset)."""
                self.close_connection = True
                if how == "reset":
                    # The reset must follow bytes the peer has: under load TCP may still hold them
                    # (autocorking), and a reset discards what it holds, so wait (5 s at most) until
                    # none is unacknowledged (SIOCOUTQ, alias TIOCOUTQ).
                    deadline = time.monotonic() + 5
                    while time.monotonic() < deadline:
                        queued = fcntl.ioctl(self.connection.fileno(), termios.TIOCOUTQ, b"\0\0\0\0")
                        if struct.unpack("i", queued)[0] == 0:
                            break
                        time.sleep(0.005)
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                elif how == "clean" and isinstance(self.connection, ssl.SSLSocket):
                    try:
                        self.connection.settimeout(5)
                        self.connection.unwrap()  # close_notify, and the proxy's answer to it
                    except (OSError, ValueError):
                        pass
                self.connection.close()

            def read_body(self):
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    body = b""
                    while True:
                        size = int(self.rfile.readline().split(b";")[0], 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass
                            return body
                        body += self.rfile.read(size)
                        self.rfile.readline()
                return self.rfile.read(int(self.headers.get("Content-Length", "0")))

            def do_GET(self):
                path, _, query = self.path.partition("?")
                params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
                if path == "/headers":
                    lines = [self.requestline] + [f"{k}: {v}" for k, v in self.headers.items()]
                    self.send(200, ("\n".join(lines) + "\n").encode())
                elif path == "/chunked":
                    self.send_response(200)
                    self.send_header("Transfer-Encoding", "chunked")
                    self.send_header("X-Origin-Connection", str(self.connection_number))
                    self.end_headers()
                    for i in range(int(params.get("n", "3"))):
                        data = f"chunk {i}\n".encode()
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.write(b"0\r\n\r\n")
                elif path == "/close":
                    self.send_response(200)
                    self.send_header("Connection", "close")
                    self.send_header("X-Origin-Connection", str(self.connection_number))
                    self.end_headers()
                    self.wfile.write(b"until the origin closes\n")
                    self.end_connection("clean")
                elif path == "/cut":
                    body = b"x" * int(params.get("bytes", "1200"))
                    self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n" + body)
                    self.end_connection(params.get("how", "reset"))
                elif path == "/big":
                    self.send(200, b"x" * int(params.get("bytes", "1000000")))
                elif path == "/random":
                    body = random.Random(int(params.get("seed", "1"))).randbytes(int(params.get("bytes", "1000000")))
                    self.send(200, body, [("X-Content-SHA256", hashlib.sha256(body).hexdigest())])
                elif path == "/redirect":
                    location = urllib.parse.unquote(params.get("to", "/"))
                    self.send(int(params.get("status", "301")), b"moved\n", [("Location", location)])
                elif path == "/loop":
                    self.send(302, b"again\n", [("Location", "/loop")])
                elif path == "/stall":
                    time.sleep(float(params.get("seconds", "30")))  # The scenario: an origin that answers late.
                    self.send(200, b"late\n")
                elif path == "/stall-body":
                    self.send_response(200)
                    self.send_header("Content-Length", "1000")
                    self.end_headers()
                    self.wfile.write(b"x" * 100)
                    self.wfile.flush()
                    time.sleep(float(params.get("seconds", "30")))  # The scenario: a body that stops.
                    self.close_connection = True
                elif path == "/surplus":
                    self.wfile.write(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
                        + b"HTTP/1.1 200 OK\r\nX-Smuggled: yes\r\nContent-Length: 6\r\n\r\nSPLIT!")
                elif path == "/continue":
                    self.wfile.write(b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n")
                    self.send(200, b"after the hints\n")
                elif path == "/hints":
                    # count interim responses before the final one
                    self.wfile.write(b"HTTP/1.1 102 Processing\r\n\r\n" * int(params.get("count", "1")))
                    self.send(200, b"after the hints\n")
                else:
                    self.send(200, f"hello from the origin, {self.path}\n".encode())

            def do_POST(self):
                if self.path == "/digest":
                    digest, length = hashlib.sha256(), 0
                    left = int(self.headers.get("Content-Length", "0"))
                    while left > 0:
                        data = self.rfile.read(min(left, 65536))
                        if not data:
                            break
                        digest.update(data)
                        length += len(data)
                        left -= len(data)
                    self.send(200, f"{digest.hexdigest()} {length}\n".encode())
                else:
                    self.send(200, self.read_body())

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

        server = Server((sys.argv[1], 0), Handler)
        if len(sys.argv) == 4:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(sys.argv[2], sys.argv[3])
            server.socket = context.wrap_socket(server.socket, server_side=True)
        print("PORT", server.server_address[1], flush=True)
        server.serve_forever()
        """#
}
