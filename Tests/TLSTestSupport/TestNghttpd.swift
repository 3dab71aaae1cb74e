import Foundation

/// nghttpd (Debian's nghttp2-server), an HTTP/2-only server with TLS on 127.0.0.1: it serves files
/// from a directory, answers ALPN `h2` and nothing else, and is killed when the value goes away.
package final class TestNghttpd {
    package static let executable = "/usr/sbin/nghttpd"
    package let port: UInt16
    private let process: Process

    /// - Parameters:
    ///   - directory: where the certificate is (`NAME.pem`, `NAME.key`); the server's output goes there.
    ///   - documentRoot: the files it serves.
    ///   - options: more of nghttpd's options (`--echo-upload`, `--trailer=NAME: VALUE`).
    package init(directory: String, certificate: String, documentRoot: String, options: [String] = []) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executable) else {
            throw ProcessLaunch.Failure(
                message: "nghttpd is not installed (\(Self.executable)): run `make deps` (nghttp2-server)")
        }
        guard let (descriptor, free) = bindLoopback(listening: nil) else {
            throw ProcessLaunch.Failure(message: "no free port on 127.0.0.1")
        }
        close(descriptor)
        port = free
        process = Process()
        process.executableURL = URL(fileURLWithPath: Self.executable)
        process.arguments =
            ["--address=127.0.0.1", "-d", documentRoot] + options
            + ["\(free)", "\(directory)/\(certificate).key", "\(directory)/\(certificate).pem"]
        _ = try ProcessLaunch.start(
            process, outputPath: directory + "/nghttpd-\(free).log", name: "nghttpd", timeout: 10
        ) { [free] _ -> Bool? in
            // nghttpd prints nothing when it is ready: ready once the port accepts.
            guard let descriptor = connectLoopback(port: free) else { return nil }
            close(descriptor)
            return true
        }
    }

    deinit {
        kill(process.processIdentifier, SIGKILL)
        process.waitForExit()
    }
}
