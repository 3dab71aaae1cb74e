import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// HTTP/2 through intercept mode with real clients (curl, httpx, grpcio, nghttp, chromium) and real
/// servers (nghttpd, nginx with http2, a grpcio server, one on Python's h2 library): the device is
/// answered `h2` only when the origin chose it, every stream reaches the origin and is logged on a
/// line of its own (`http_version` `HTTP/2`, its `stream_id`), and the connection is one judged line.
@Suite("HTTP/2 through intercept mode, real clients and servers", .startsProcesses(timeLimit: .seconds(120)))
struct HTTP2ProcessTests {
    static let host = "h2.intercept.test"

    /// A fixture with a leaf for ``host``, and a document root holding `index.html` and `big.bin`.
    static func fixture() throws -> (InterceptFixture, documents: String) {
        let fixture = try InterceptFixture(names: [host])
        try fixture.leaf("leaf", for: [host])
        let documents = fixture.directory + "/www"
        try FileManager.default.createDirectory(atPath: documents, withIntermediateDirectories: true)
        try "hello over h2\n".write(toFile: documents + "/index.html", atomically: true, encoding: .utf8)
        try Data(BytePattern(seed: 7).bytes(at: 0, count: 1_000_000)).write(
            to: URL(fileURLWithPath: documents + "/big.bin"))
        return (fixture, documents)
    }

    static var python: String { PrometheusScrape.python }

    @Test("curl --http2 to nghttpd: h2 on both legs, each stream on one connection logged with its id")
    func curlToNghttpd() throws {
        let (fixture, documents) = try Self.fixture()
        let server = try TestNghttpd(
            directory: fixture.directory, certificate: "leaf", documentRoot: documents, options: ["--echo-upload"])
        let daemon = try fixture.daemon()
        let base = "https://\(Self.host):\(server.port)"
        let upload = fixture.directory + "/upload.bin"
        try Data(BytePattern(seed: 3).bytes(at: 0, count: 300_000)).write(to: URL(fileURLWithPath: upload))
        // Three transfers multiplexed on one connection (-Z), one of them a POST nghttpd echoes.
        let curl = try fixture.curl(
            daemon,
            [
                "--http2", "-Z", "-w", "%{http_version} %{response_code} %{size_download}\\n",
                "\(base)/index.html", "-o", "/dev/null", "\(base)/big.bin", "-o", fixture.directory + "/big.out",
                // --next: the body is the third transfer's alone (the other options are global or repeated).
                "--next", "-sS", "--proxy", "http://127.0.0.1:\(daemon.port)", "--http2", "--cacert", fixture.caPEM,
                "-w", "%{http_version} %{response_code} %{size_download}\\n",
                "--data-binary", "@\(upload)", "\(base)/echo", "-o", fixture.directory + "/echo.out",
            ])
        #expect(curl.status == 0, "\(curl.standardError)")
        let results = curl.standardOutput.split(separator: "\n").map(String.init).sorted()
        #expect(results == ["2 200 1000000", "2 200 14", "2 200 300000"], "\(curl.standardOutput)")
        #expect(
            FileManager.default.contents(atPath: fixture.directory + "/big.out")
                == FileManager.default.contents(atPath: documents + "/big.bin"))
        #expect(
            FileManager.default.contents(atPath: fixture.directory + "/echo.out")
                == FileManager.default.contents(atPath: upload))
        let requests = daemon.lines("request", atLeast: 3)
        #expect(requests.count == 3)
        #expect(requests.allSatisfy { $0["http_version"] as? String == "HTTP/2" && $0["status"] as? Int == 200 })
        let streams = requests.compactMap { $0["stream_id"] as? Int }
        #expect(Set(streams).count == 3 && streams.allSatisfy { $0 % 2 == 1 }, "\(streams)")
        #expect(Set(requests.compactMap { $0["connection_id"] as? Int }).count == 1, "one connection")
        let post = try #require(requests.first { $0["method"] as? String == "POST" })
        #expect(post["request_body_bytes"] as? Int == 300_000 && post["response_body_bytes"] as? Int == 300_000)
        let connections = daemon.lines("connection", atLeast: 1)
        #expect(connections.count == 1)
        #expect(connections.first?["inspect"] as? String == "intercept" && connections.first?["requests"] as? Int == 3)
        // The HAR says HTTP/2 for each entry (report and /metrics: pythonH2Origin).
        let har = atsproxyctl("har", daemon.logPath)
        let entries = jsonValue(jsonObject(har.standardOutput), "log", "entries") as? [[String: Any]] ?? []
        #expect(entries.count == 3, "\(har.standardError)")
        #expect(entries.allSatisfy { jsonValue($0, "request", "httpVersion") as? String == "HTTP/2" })
        #expect(entries.allSatisfy { jsonValue($0, "response", "httpVersion") as? String == "HTTP/2" })
        #expect(daemon.terminate() == 0)
    }

    @Test("an origin that speaks only HTTP/1.1: curl --http2 is answered http/1.1, and its line says so")
    func http1OnlyOrigin() throws {
        let (fixture, _) = try Self.fixture()
        let nginx = try TestNginx(directory: fixture.directory, certificates: ["leaf"])
        let daemon = try fixture.daemon()
        let curl = try fixture.curl(
            daemon, ["--http2", "-o", "/dev/null", "-w", "%{http_version}", "https://\(Self.host):\(nginx.ports[0])/"])
        #expect(curl.status == 0 && curl.standardOutput == "1.1", "\(curl.standardOutput) \(curl.standardError)")
        let request = try #require(daemon.lines("request", atLeast: 1).first)
        #expect(request["http_version"] as? String == "HTTP/1.1" && request["stream_id"] is NSNull, "\(request)")
        #expect(daemon.terminate() == 0)
    }

    @Test("nginx with http2 on: curl --http2 gets HTTP/2 through the proxy")
    func nginxHTTP2() throws {
        let (fixture, _) = try Self.fixture()
        let nginx = try TestNginx(directory: fixture.directory, certificates: ["leaf"], http2: true)
        let daemon = try fixture.daemon()
        let curl = try fixture.curl(
            daemon, ["--http2", "-w", " %{http_version}", "https://\(Self.host):\(nginx.ports[0])/"])
        #expect(
            curl.status == 0 && curl.standardOutput == "hello from nginx\n 2",
            "\(curl.standardOutput) \(curl.standardError)")
        let request = try #require(daemon.lines("request", atLeast: 1).first)
        #expect(request["http_version"] as? String == "HTTP/2" && request["stream_id"] as? Int == 1, "\(request)")
        #expect(daemon.terminate() == 0)
    }

    static let httpxClient = #"""
        import asyncio, ssl, sys
        import httpx
        proxy, url, ca, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
        async def main():
            context = ssl.create_default_context(cafile=ca)
            async with httpx.AsyncClient(http2=True, proxy="http://127.0.0.1:" + proxy, verify=context, timeout=30) as client:
                # One request first: until a connection has said h2, httpx opens one per request.
                answers = [await client.get(url)]
                answers += await asyncio.gather(*[client.get(url + "?n=%d" % n) for n in range(count - 1)])
            print(" ".join(sorted(set(a.http_version for a in answers))), sum(a.status_code == 200 for a in answers))
        asyncio.run(main())
        """#

    @Test("httpx with http2=True: 40 concurrent requests, all HTTP/2 on one intercepted connection")
    func httpxConcurrent() throws {
        let (fixture, documents) = try Self.fixture()
        let server = try TestNghttpd(directory: fixture.directory, certificate: "leaf", documentRoot: documents)
        let daemon = try fixture.daemon()
        let result = try runCommand(
            Self.python,
            [
                "-c", Self.httpxClient, "\(daemon.port)", "https://\(Self.host):\(server.port)/index.html",
                fixture.caPEM, "40",
            ], timeLimit: 120)
        #expect(result.standardOutput == "HTTP/2 40\n", "\(result.standardOutput) \(result.standardError)")
        let requests = daemon.lines("request", atLeast: 40)
        #expect(requests.count == 40 && requests.allSatisfy { $0["http_version"] as? String == "HTTP/2" })
        #expect(daemon.lines("connection", atLeast: 1).count == 1)
        #expect(daemon.terminate() == 0)
    }

    static let grpcServer = #"""
        import concurrent.futures, sys
        import grpc
        certificate, key = sys.argv[1], sys.argv[2]
        def say(request, context):
            return b"echo:" + request
        def fail(request, context):
            context.abort(grpc.StatusCode.NOT_FOUND, "no such thing: caf\u00e9 100%")
        handler = grpc.method_handlers_generic_handler("test.Echo", {
            "Say": grpc.unary_unary_rpc_method_handler(say),
            "Fail": grpc.unary_unary_rpc_method_handler(fail),
        })
        server = grpc.server(concurrent.futures.ThreadPoolExecutor(4))
        server.add_generic_rpc_handlers((handler,))
        credentials = grpc.ssl_server_credentials([(open(key, "rb").read(), open(certificate, "rb").read())])
        port = server.add_secure_port("127.0.0.1:0", credentials)
        server.start()
        print("PORT", port, flush=True)
        server.wait_for_termination()
        """#

    static let grpcClient = #"""
        import sys
        import grpc
        proxy, target, ca = sys.argv[1], sys.argv[2], sys.argv[3]
        channel = grpc.secure_channel(
            target, grpc.ssl_channel_credentials(open(ca, "rb").read()),
            options=[("grpc.http_proxy", "http://127.0.0.1:" + proxy)])
        print(channel.unary_unary("/test.Echo/Say")(b"hi", timeout=30).decode())
        try:
            channel.unary_unary("/test.Echo/Fail")(b"x", timeout=30)
        except grpc.RpcError as error:
            print(error.code().name, error.details())
        """#

    @Test("a grpcio client (ALPN h2 only) to a grpcio server: intercepted, each call logged with its grpc-status")
    func grpc() throws {
        let (fixture, _) = try Self.fixture()
        let server = try TestScriptServer(
            interpreter: Self.python,
            ["-c", Self.grpcServer, fixture.factory.path("leaf.pem"), fixture.factory.path("leaf.key")],
            output: fixture.directory + "/grpc.log", name: "grpc server")
        let port = server.port
        defer { withExtendedLifetime(server) {} }  // Killed when the test ends, not after its last use.
        let daemon = try fixture.daemon()
        let result = try runCommand(
            Self.python, ["-c", Self.grpcClient, "\(daemon.port)", "\(Self.host):\(port)", fixture.caPEM],
            timeLimit: 60)
        #expect(
            result.standardOutput == "echo:hi\nNOT_FOUND no such thing: caf\u{e9} 100%\n",
            "\(result.standardOutput) \(result.standardError)")
        let requests = daemon.lines("request", atLeast: 2)
        let say = try #require(requests.first { ($0["url"] as? String)?.hasSuffix("/test.Echo/Say") == true })
        #expect(say["grpc_status"] as? Int == 0 && say["http_version"] as? String == "HTTP/2", "\(say)")
        let fail = try #require(requests.first { ($0["url"] as? String)?.hasSuffix("/test.Echo/Fail") == true })
        #expect(
            fail["grpc_status"] as? Int == 5 && fail["grpc_message"] as? String == "no such thing: caf\u{e9} 100%",
            "\(fail)")
        let connection = try #require(daemon.lines("connection", atLeast: 1).first)
        #expect(connection["inspect"] as? String == "intercept" && connection["passthrough"] is NSNull, "\(connection)")
        #expect(daemon.terminate() == 0)
    }

    /// An HTTP/2 origin on Python's `h2` library (the protocol state machine curl's peers are tested
    /// against, none of nghttp2's code): `/echo` answers the request's body, `/trailers` answers with
    /// trailers, anything else `hello from h2`. It honours the proxy's flow-control windows, and
    /// prints what it received of each request (path, body bytes) for the test to compare.
    static let h2Server = #"""
        import socket, ssl, sys, threading
        import h2.config, h2.connection, h2.events
        certificate, key = sys.argv[1], sys.argv[2]
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certificate, key)
        context.set_alpn_protocols(["h2"])
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        print("PORT", listener.getsockname()[1], flush=True)
        def serve(raw):
            sock = context.wrap_socket(raw, server_side=True)
            conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
            conn.initiate_connection()
            sock.sendall(conn.data_to_send())
            heads, bodies, pending = {}, {}, {}
            def pump(stream):
                # As much of the stream's answer as its windows allow; the rest on WINDOW_UPDATE.
                data, trailers = pending[stream]
                while data:
                    size = min(len(data), conn.local_flow_control_window(stream), conn.max_outbound_frame_size)
                    if size <= 0:
                        pending[stream] = (data, trailers)
                        return
                    conn.send_data(stream, data[:size])
                    data = data[size:]
                del pending[stream]
                if trailers:
                    conn.send_headers(stream, trailers, end_stream=True)
                else:
                    conn.end_stream(stream)
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    return
                for event in conn.receive_data(chunk):
                    if isinstance(event, h2.events.RequestReceived):
                        heads[event.stream_id] = dict(event.headers)
                        bodies[event.stream_id] = b""
                    elif isinstance(event, h2.events.DataReceived):
                        bodies[event.stream_id] += event.data
                        conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    elif isinstance(event, h2.events.StreamEnded):
                        stream, path = event.stream_id, heads[event.stream_id][":path"]
                        print("REQUEST", path, len(bodies[stream]), flush=True)
                        if path == "/echo":
                            body, trailers = bodies[stream], None
                        elif path == "/trailers":
                            body, trailers = b"with trailers\n", [("x-checksum", "h2-%d" % stream)]
                        else:
                            body, trailers = b"hello from h2\n", None
                        conn.send_headers(stream, [(":status", "200"), ("content-type", "text/plain")])
                        pending[stream] = (body, trailers)
                        pump(stream)
                    elif isinstance(event, h2.events.WindowUpdated):
                        for stream in list(pending):
                            if event.stream_id in (0, stream):
                                pump(stream)
                sock.sendall(conn.data_to_send())
        def guarded(raw):
            try:
                serve(raw)
            except (ssl.SSLError, OSError):
                pass
        while True:
            raw, _ = listener.accept()
            threading.Thread(target=guarded, args=(raw,), daemon=True).start()
        """#

    @Test(
        "a Python h2 origin: curl --http2's three streams (an upload echoed, trailers) arrive whole; report and /metrics count them"
    )
    func pythonH2Origin() throws {
        let (fixture, _) = try Self.fixture()
        let output = fixture.directory + "/h2-server.log"
        let server = try TestScriptServer(
            interpreter: Self.python,
            ["-c", Self.h2Server, fixture.factory.path("leaf.pem"), fixture.factory.path("leaf.key")],
            output: output, name: "Python h2 server")
        let port = server.port
        defer { withExtendedLifetime(server) {} }  // Killed when the test ends, not after its last use.
        let daemon = try fixture.daemon()
        let base = "https://\(Self.host):\(port)"
        // Past the origin's 64 KiB initial window and the proxy's 256 KiB: the server's windows open as
        // the proxy frames the bytes.
        let upload = fixture.directory + "/upload.bin"
        try Data(BytePattern(seed: 11).bytes(at: 0, count: 400_000)).write(to: URL(fileURLWithPath: upload))
        let trailerHeaders = fixture.directory + "/trailers.headers"
        let curl = try fixture.curl(
            daemon,
            [
                "--http2", "-Z", "-w", "%{http_version} %{response_code} %{size_download}\\n",
                "\(base)/hello", "-o", "/dev/null",
                "-D", trailerHeaders, "\(base)/trailers", "-o", "/dev/null",
                "--next", "-sS", "--proxy", "http://127.0.0.1:\(daemon.port)", "--http2", "--cacert", fixture.caPEM,
                "-w", "%{http_version} %{response_code} %{size_download}\\n",
                "--data-binary", "@\(upload)", "\(base)/echo", "-o", fixture.directory + "/echo.out",
            ])
        #expect(curl.status == 0, "\(curl.standardError)")
        let results = curl.standardOutput.split(separator: "\n").map(String.init).sorted()
        #expect(results == ["2 200 14", "2 200 14", "2 200 400000"], "\(curl.standardOutput)")
        #expect(
            FileManager.default.contents(atPath: fixture.directory + "/echo.out")
                == FileManager.default.contents(atPath: upload))
        // The response's trailers reached curl (it writes them after the headers).
        let dumped = (try? String(contentsOfFile: trailerHeaders, encoding: .utf8)) ?? ""
        #expect(dumped.contains("x-checksum: h2-"), "\(dumped)")
        // The origin received each request whole.
        let received = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        for expected in ["REQUEST /hello 0", "REQUEST /trailers 0", "REQUEST /echo 400000"] {
            #expect(received.contains(expected), "\(received)")
        }
        let requests = daemon.lines("request", atLeast: 3)
        #expect(requests.count == 3 && requests.allSatisfy { $0["http_version"] as? String == "HTTP/2" })
        #expect(Set(requests.compactMap { $0["connection_id"] as? Int }).count == 1, "one connection")
        let echo = try #require(requests.first { ($0["url"] as? String)?.hasSuffix("/echo") == true })
        #expect(echo["request_body_bytes"] as? Int == 400_000 && echo["response_body_bytes"] as? Int == 400_000)
        let connections = daemon.lines("connection", atLeast: 1)
        #expect(connections.count == 1 && connections.first?["requests"] as? Int == 3, "\(connections)")
        // report and /metrics count the streams as requests, as they count HTTP/1.1's.
        let report = atsproxyctl("report", "--json", daemon.logPath)
        let hosts = jsonObject(report.standardOutput)?["hosts"] as? [[String: Any]] ?? []
        let host = hosts.first { $0["host"] as? String == Self.host }
        #expect(host?["requests"] as? Int == 3 && host?["connections"] as? Int == 1, "\(report.standardOutput)")
        let scrape = try PrometheusScrape(socket: daemon.controlSocket)
        #expect(scrape.value("atsproxy_requests_total", ["action": "allowed", "status_class": "2xx"]) == 3)
        #expect(daemon.terminate() == 0)
    }

    @Test("--block-style page over HTTP/2: each stream gets the 403 page, nothing reaches the origin")
    func pagePerStream() throws {
        let fixture = try InterceptFixture(names: [Self.host])
        // A leaf valid for 900 days: past the 825 days Apple allows, the handshake itself fine.
        try fixture.factory.certificate(
            "long", issuer: "root", days: 900,
            extensions: ["subjectAltName=DNS:\(Self.host)", "extendedKeyUsage=serverAuth"])
        let documents = fixture.directory + "/www"
        try FileManager.default.createDirectory(atPath: documents, withIntermediateDirectories: true)
        try "must not be served\n".write(toFile: documents + "/index.html", atomically: true, encoding: .utf8)
        let server = try TestNghttpd(directory: fixture.directory, certificate: "long", documentRoot: documents)
        let daemon = try fixture.daemon(["--block-style", "page"])
        let base = "https://\(Self.host):\(server.port)"
        // The first stream asks for HTML (a browser's accept), the second takes what it gets.
        let html = fixture.directory + "/page.html"
        let text = fixture.directory + "/page.txt"
        let htmlHeaders = fixture.directory + "/page.headers"
        let curl = try fixture.curl(
            daemon,
            [
                "--http2", "-Z", "-w", "%{http_version} %{response_code}\\n", "-H", "accept: text/html",
                "-D", htmlHeaders, "\(base)/index.html", "-o", html,
                "--next", "-sS", "--proxy", "http://127.0.0.1:\(daemon.port)", "--http2", "--cacert", fixture.caPEM,
                "-w", "%{http_version} %{response_code}\\n", "\(base)/other", "-o", text,
            ])
        #expect(curl.standardOutput == "2 403\n2 403\n", "\(curl.standardOutput) \(curl.standardError)")
        // Each stream's page names the violation and the key; the HTML one for the stream that asked.
        let page = (try? String(contentsOfFile: html, encoding: .utf8)) ?? ""
        #expect(
            page.contains("<h1>Blocked by App Transport Security</h1>") && page.contains("validity_too_long"), "\(page)"
        )
        let words = (try? String(contentsOfFile: text, encoding: .utf8)) ?? ""
        #expect(words.hasPrefix("atsproxy blocked \(base)/other") && words.contains("validity_too_long"), "\(words)")
        let headers = (try? String(contentsOfFile: htmlHeaders, encoding: .utf8)) ?? ""
        #expect(headers.lowercased().contains("x-ats-violations: validity_too_long"), "\(headers)")
        let requests = daemon.lines("request", atLeast: 2)
        #expect(
            requests.count == 2
                && requests.allSatisfy { $0["status"] as? Int == 403 && $0["action"] as? String == "blocked" })
        let connection = try #require(daemon.lines("connection", atLeast: 1).first)
        #expect(connection.violationNames == ["validity_too_long"], "\(connection)")
        #expect(daemon.terminate() == 0)
    }

    @Test(
        "--block-style page for a server that refused the proxy's handshake: an h2-only device gets the page in HTTP/2, one offering HTTP/1.1 too in HTTP/1.1"
    )
    func pageWithoutOrigin() throws {
        let fixture = try InterceptFixture(names: [Self.host])
        let arguments = try NonCompliantServer.tls10Only.serverArguments(fixture.factory, hostName: Self.host)
        let server = try TestTLSServer(directory: fixture.directory, arguments)
        let daemon = try fixture.daemon(["--block-style", "page"])
        let target = "\(Self.host):\(server.port)"
        // nghttp offers h2 alone, as a gRPC client does: no HTTP/1.1 to answer the page in.
        let forwarder = try TestScriptServer(
            interpreter: Self.python, ["-c", Self.connectForwarder, "\(daemon.port)", target],
            output: fixture.directory + "/forwarder.log", name: "CONNECT forwarder")
        defer { withExtendedLifetime(forwarder) {} }
        let nghttp = try runCommand(
            "/usr/bin/nghttp",
            [
                "-v", "-H", ":authority: \(target)", "-H", "accept: text/plain",
                "https://127.0.0.1:\(forwarder.port)/app",
            ],
            timeLimit: 60)
        #expect(nghttp.status == 0, "\(nghttp.standardOutput) \(nghttp.standardError)")
        #expect(nghttp.standardOutput.contains("The negotiated protocol: h2"), "\(nghttp.standardOutput)")
        #expect(nghttp.standardOutput.contains(":status: 403"), "\(nghttp.standardOutput)")
        #expect(nghttp.standardOutput.contains("x-ats-violations: tls_version"), "\(nghttp.standardOutput)")
        #expect(nghttp.standardOutput.contains("atsproxy blocked https://\(target)/app"), "\(nghttp.standardOutput)")
        // curl offers h2 and http/1.1: the page comes in HTTP/1.1, as it always has.
        let curl = try fixture.curl(
            daemon, ["--http2", "-w", "%{http_version} %{response_code}\\n", "-o", "/dev/null", "https://\(target)/"])
        #expect(curl.standardOutput == "1.1 403\n", "\(curl.standardOutput) \(curl.standardError)")
        let requests = daemon.lines("request", atLeast: 2)
        let versions = requests.compactMap { $0["http_version"] as? String }.sorted()
        #expect(versions == ["HTTP/1.1", "HTTP/2"], "\(requests)")
        #expect(requests.allSatisfy { $0["status"] as? Int == 403 && $0["action"] as? String == "blocked" })
        // nghttp opens its request on stream 13 (1-11 are its priority tree's placeholders).
        #expect(requests.first { $0["http_version"] as? String == "HTTP/2" }?["stream_id"] as? Int == 13)
        let connections = daemon.lines("connection", atLeast: 2)
        #expect(
            connections.count == 2 && connections.allSatisfy { $0.violationNames == ["tls_version"] }, "\(connections)")
        #expect(daemon.terminate() == 0)
    }

    /// A TLS 1.2 server whose only suite is ECDHE-RSA-AES256-SHA (a CBC suite ATS allows), speaking
    /// h2 and http/1.1; an HTTP/1.1 request gets a small 200.
    static let cbcServer = #"""
        import socket, ssl, sys, threading
        certificate, key = sys.argv[1], sys.argv[2]
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.maximum_version = ssl.TLSVersion.TLSv1_2
        context.set_ciphers("ECDHE-RSA-AES256-SHA")
        context.set_alpn_protocols(["h2", "http/1.1"])
        context.load_cert_chain(certificate, key)
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        print("PORT", listener.getsockname()[1], flush=True)
        def serve(raw):
            try:
                conn = context.wrap_socket(raw, server_side=True)
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    data += chunk
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
                # close_notify: a session that ends cleanly stays resumable.
                conn.unwrap().close()
            except (ssl.SSLError, OSError):
                pass
        while True:
            raw, _ = listener.accept()
            threading.Thread(target=serve, args=(raw,), daemon=True).start()
        """#

    /// ``cbcServer`` with the fixture's leaf, and a daemon in intercept mode: the URL to fetch.
    static func cbcOrigin() throws -> (
        fixture: InterceptFixture, server: TestScriptServer, daemon: DaemonProcess, url: String
    ) {
        let (fixture, _) = try Self.fixture()
        let server = try TestScriptServer(
            interpreter: Self.python,
            ["-c", Self.cbcServer, fixture.factory.path("leaf.pem"), fixture.factory.path("leaf.key")],
            output: fixture.directory + "/cbc.log", name: "CBC server")
        return (fixture, server, try fixture.daemon(), "https://\(Self.host):\(server.port)/")
    }

    @Test("h2 over TLS 1.2 with a CBC suite ATS allows is h2_inadequate_security; HTTP/1.1 on the same server is not")
    func inadequateSecurity() throws {
        let (fixture, server, daemon, url) = try Self.cbcOrigin()
        defer { withExtendedLifetime(server) {} }  // Killed when the test ends, not after its last use.
        let http2 = try fixture.curl(daemon, ["--http2", url])
        #expect(http2.status != 0, "blocked: the device's handshake fails")
        let http1 = try fixture.curl(daemon, ["--http1.1", url])
        #expect(http1.status == 0 && http1.standardOutput == "ok\n", "\(http1.standardError)")
        let lines = daemon.lines("connection", atLeast: 2)
        #expect(lines.map(\.violationNames) == [["h2_inadequate_security"], []], "\(lines)")
        #expect(lines.first?.action == "blocked")
        #expect(daemon.terminate() == 0)
    }

    @Test(
        "a resumed upstream session is judged with its own ALPN: HTTP/1.1 first, then h2 on the resumed session, is h2_inadequate_security"
    )
    func inadequateSecurityOnResumption() throws {
        let (fixture, server, daemon, url) = try Self.cbcOrigin()
        defer { withExtendedLifetime(server) {} }  // Killed when the test ends, not after its last use.
        // The HTTP/1.1 connection is allowed, and its upstream session kept; the h2 one resumes it.
        let http1 = try fixture.curl(daemon, ["--http1.1", url])
        #expect(http1.status == 0 && http1.standardOutput == "ok\n", "\(http1.standardError)")
        #expect(daemon.lines("connection", atLeast: 1).count == 1)
        let http2 = try fixture.curl(daemon, ["--http2", url])
        #expect(http2.status != 0, "blocked: the device's handshake fails")
        let lines = daemon.lines("connection", atLeast: 2)
        #expect(lines.map(\.violationNames) == [[], ["h2_inadequate_security"]], "\(lines)")
        #expect(lines.map { $0["upstream_resumed"] as? Bool } == [false, true], "\(lines)")
        #expect(lines.last?.action == "blocked")
        #expect(daemon.terminate() == 0)
    }

    @Test("chromium loads a page with 30 images from nghttpd through the proxy: h2 throughout, a line per stream")
    func chromiumPage() throws {
        signal(SIGPIPE, SIG_IGN)
        let (fixture, documents) = try Self.fixture()
        // A 1x1 PNG, 30 times under different names, and a page that shows them all.
        let png = Data(
            base64Encoded:
                "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")!
        var page = "<!doctype html><html><head><title>many</title></head><body>\n"
        for index in 0..<30 {
            try png.write(to: URL(fileURLWithPath: documents + "/image-\(index).png"))
            page += "<img src=\"/image-\(index).png\" width=\"1\" height=\"1\">\n"
        }
        try (page + "</body></html>\n").write(toFile: documents + "/page.html", atomically: true, encoding: .utf8)
        let server = try TestNghttpd(directory: fixture.directory, certificate: "leaf", documentRoot: documents)
        let daemon = try fixture.daemon()
        let result = try runCommand(
            Self.python,
            [
                Repository.path("Tests/ATSProxyDaemonTests/Browser/h2page.py"), "--proxy", "\(daemon.port)", "--ca",
                fixture.caPEM, "--url", "https://\(Self.host):\(server.port)/page.html",
            ], timeLimit: 180)
        let seen = try #require(jsonObject(result.standardOutput), "\(result.standardOutput) \(result.standardError)")
        #expect(seen["page"] as? String == "h2" && seen["loaded"] as? Int == 30, "\(seen)")
        #expect((seen["protocols"] as? [String])?.allSatisfy { $0 == "h2" } == true, "\(seen)")
        let requests = daemon.lines("request", atLeast: 31)
        let pageAndImages = requests.filter { ($0["url"] as? String)?.contains("favicon") == false }
        #expect(pageAndImages.count == 31, "the page and its 30 images")
        #expect(pageAndImages.allSatisfy { $0["http_version"] as? String == "HTTP/2" && $0["status"] as? Int == 200 })
        let connections = Set(pageAndImages.compactMap { $0["connection_id"] as? Int })
        #expect(connections.count == 1, "one multiplexed connection: \(connections)")
        #expect(daemon.terminate() == 0)
    }

    /// nghttp speaks no HTTP proxy: a forwarder that opens a CONNECT to the proxy for each client.
    static let connectForwarder = #"""
        import socket, sys, threading
        proxy, target = int(sys.argv[1]), sys.argv[2]
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        print("PORT", listener.getsockname()[1], flush=True)
        def pipe(source, sink):
            try:
                while True:
                    data = source.recv(65536)
                    if not data:
                        break
                    sink.sendall(data)
                sink.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        def serve(client):
            upstream = socket.create_connection(("127.0.0.1", proxy))
            upstream.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
            answer = b""
            while b"\r\n\r\n" not in answer:
                answer += upstream.recv(1)
            threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
            pipe(upstream, client)
        while True:
            client, _ = listener.accept()
            threading.Thread(target=serve, args=(client,), daemon=True).start()
        """#

    @Test("nghttp (nghttp2-client) through a CONNECT forwarder: 10 concurrent streams, each on its line")
    func nghttpClient() throws {
        let (fixture, documents) = try Self.fixture()
        let server = try TestNghttpd(directory: fixture.directory, certificate: "leaf", documentRoot: documents)
        let daemon = try fixture.daemon()
        let target = "\(Self.host):\(server.port)"
        let forwarder = try TestScriptServer(
            interpreter: Self.python, ["-c", Self.connectForwarder, "\(daemon.port)", target],
            output: fixture.directory + "/forwarder.log", name: "CONNECT forwarder")
        let port = forwarder.port
        defer { withExtendedLifetime(forwarder) {} }
        let nghttp = try runCommand(
            "/usr/bin/nghttp",
            ["-n", "-s", "-m", "10", "-H", ":authority: \(target)", "https://127.0.0.1:\(port)/index.html"],
            timeLimit: 60)
        #expect(nghttp.status == 0, "\(nghttp.standardOutput) \(nghttp.standardError)")
        let requests = daemon.lines("request", atLeast: 10)
        #expect(requests.count == 10)
        #expect(requests.allSatisfy { $0["http_version"] as? String == "HTTP/2" && $0["status"] as? Int == 200 })
        #expect(Set(requests.compactMap { $0["stream_id"] as? Int }).count == 10)
        #expect(daemon.terminate() == 0)
    }
}
