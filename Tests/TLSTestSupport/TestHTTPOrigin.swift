import Foundation

/// A real plain-HTTP/1.1 origin on 127.0.0.1 (Python's http.server, keep-alive), for the proxy's
/// forwarding tests. Stopped when the value goes away.
///
/// - `GET /headers`: the request line and headers as the origin received them, one per line.
/// - `POST /echo`: the request body back (Content-Length or chunked request bodies).
/// - `GET /chunked?n=N`: N chunks of "chunk i\n", chunked.
/// - `GET /close`: a body delimited by the origin closing the connection (no length).
/// - `GET /big?bytes=N`: N bytes of "x" with a Content-Length.
/// - `GET /continue`: a 103 Early Hints response before the final 200.
/// Every response carries `X-Origin-Connection: <n>`, the number of the TCP connection it came on.
public final class TestHTTPOrigin {
    public let port: UInt16
    private let process: Process

    public init(directory: String) throws {
        let scriptPath = directory + "/origin-\(UUID().uuidString).py"
        try TestHTTPOrigin.script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-u", scriptPath]
        port = try ProcessLaunch.start(process, outputPath: scriptPath + ".log", name: "the test HTTP origin", timeout: 10) {
            ProcessLaunch.port(after: "PORT ", in: $0)
        }
    }

    deinit {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    static let script = #"""
import http.server, socketserver, sys, itertools

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
            self.close_connection = True
        elif path == "/big":
            self.send(200, b"x" * int(params.get("bytes", "1000000")))
        elif path == "/continue":
            self.wfile.write(b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n")
            self.send(200, b"after the hints\n")
        else:
            self.send(200, f"hello from the origin, {self.path}\n".encode())

    def do_POST(self):
        self.send(200, self.read_body())

class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

server = Server(("127.0.0.1", 0), Handler)
print("PORT", server.server_address[1], flush=True)
server.serve_forever()
"""#
}
