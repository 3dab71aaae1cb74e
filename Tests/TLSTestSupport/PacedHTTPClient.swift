import Foundation
import Testing

/// An HTTP client through the proxy that reads or sends at a steady rate, in 16 KiB steps (Python's
/// http.client, paced by hand).
///
/// curl's `--limit-rate` is no use for an idle timeout of a second: it reads whatever the kernel
/// has buffered at full speed, then sleeps for as long as two seconds to bring its average down,
/// and a connection where nothing moves for that long is idle by any definition.
package enum PacedHTTPClient {
    /// How the request reaches the origin through the proxy.
    package enum Route: String, Sendable {
        /// CONNECT, then TLS inside the tunnel, trusting `caFile`.
        case tlsTunnel
        /// CONNECT, then plain HTTP inside the tunnel.
        case cleartextTunnel
        /// An absolute http:// URL for the proxy to forward.
        case forwarded
    }

    /// GETs `path` from `localhost:originPort` and writes the body to `bodyPath`, reading
    /// `bytesPerSecond`. Standard output: `<status> <X-Content-SHA256 or None> <body length>`.
    package static func download(
        route: Route, proxyPort: UInt16, originPort: UInt16, path: String, bytesPerSecond: Int, to bodyPath: String,
        caFile: String = "", directory: String
    ) throws -> CommandResult {
        try run(
            ["download", route.rawValue, "\(proxyPort)", "\(originPort)", path, "\(bytesPerSecond)", bodyPath, caFile],
            directory)
    }

    /// POSTs the file at `bodyPath` to `path`, sending `bytesPerSecond`. Standard output:
    /// `<status> <response body>`.
    package static func upload(
        route: Route, proxyPort: UInt16, originPort: UInt16, path: String, bytesPerSecond: Int, from bodyPath: String,
        caFile: String = "", directory: String
    ) throws -> CommandResult {
        try run(
            ["upload", route.rawValue, "\(proxyPort)", "\(originPort)", path, "\(bytesPerSecond)", bodyPath, caFile],
            directory)
    }

    private static func run(_ arguments: [String], _ directory: String) throws -> CommandResult {
        let scriptPath = directory + "/paced-client-\(UUID().uuidString).py"
        try script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        return try runCommand("/usr/bin/python3", [scriptPath] + arguments)
    }

    static let script = #"""
        import http.client, os, ssl, sys, time

        mode, route, proxy_port, origin_port, path, rate, body_path, ca_file = sys.argv[1:9]
        proxy_port, origin_port, rate = int(proxy_port), int(origin_port), int(rate)
        step = 16384

        if route == "forwarded":
            connection = http.client.HTTPConnection("127.0.0.1", proxy_port, timeout=30)
            target = f"http://localhost:{origin_port}{path}"
        elif route == "cleartextTunnel":
            connection = http.client.HTTPConnection("127.0.0.1", proxy_port, timeout=30)
            connection.set_tunnel("localhost", origin_port)
            target = path
        else:
            context = ssl.create_default_context(cafile=ca_file)
            connection = http.client.HTTPSConnection("127.0.0.1", proxy_port, timeout=30, context=context)
            connection.set_tunnel("localhost", origin_port)
            target = path

        def pace(start, done):
            delay = start + done / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)  # The scenario: a client held to its rate.

        if mode == "download":
            connection.request("GET", target)
            response = connection.getresponse()
            start, done = time.monotonic(), 0
            with open(body_path, "wb") as body:
                while True:
                    data = response.read(step)
                    if not data:
                        break
                    body.write(data)
                    done += len(data)
                    pace(start, done)
            print(response.status, response.getheader("X-Content-SHA256"), done)
        else:
            size = os.path.getsize(body_path)
            connection.putrequest("POST", target)
            connection.putheader("Content-Length", str(size))
            connection.putheader("Content-Type", "application/octet-stream")
            connection.endheaders()
            start, done = time.monotonic(), 0
            with open(body_path, "rb") as body:
                while True:
                    data = body.read(step)
                    if not data:
                        break
                    connection.send(data)
                    done += len(data)
                    pace(start, done)
            response = connection.getresponse()
            print(response.status, response.read().decode().strip())
        """#
}
