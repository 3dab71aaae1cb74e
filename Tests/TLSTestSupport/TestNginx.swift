import Foundation

/// A real nginx on 127.0.0.1, one HTTPS virtual host per certificate, each on its own port: run
/// unprivileged from a scratch prefix (`-p DIR -c nginx.conf`, one process in the foreground), and
/// killed when the value goes away. Every host answers `GET /` with 200 and `body`.
///
/// nginx comes from Debian's package, which `make deps` installs (the Makefile's APT_PACKAGES):
/// when it is missing the start fails and says so; a test that needs it must not pass without it.
package final class TestNginx {
    /// Each virtual host's port, in the order of the certificates given.
    package let ports: [UInt16]
    private let process: Process

    package static let executable = "/usr/sbin/nginx"

    /// - Parameters:
    ///   - directory: where the certificates are (`NAME.pem`, `NAME.key`); nginx's files go in a
    ///     subdirectory.
    ///   - certificates: one virtual host per name.
    ///   - locations: more directives for every virtual host's `server` block (locations of its own:
    ///     files to serve, headers to add).
    ///   - http2: every host also speaks HTTP/2 (ALPN h2), as a current deployment does.
    package init(
        directory: String, certificates: [String], body: String = "hello from nginx\n", locations: String = "",
        http2: Bool = false
    ) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executable) else {
            throw ProcessLaunch.Failure(
                message:
                    "nginx is not installed (\(Self.executable)): run `make deps`, which installs the Makefile's APT_PACKAGES"
            )
        }
        let prefix = directory + "/nginx-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: prefix + "/temp", withIntermediateDirectories: true)
        // Free ports now; nginx binds them a moment later. A port taken in between fails the start.
        ports = try certificates.map { _ in
            guard let (descriptor, port) = bindLoopback(listening: nil) else {
                throw ProcessLaunch.Failure(message: "no free port on 127.0.0.1")
            }
            close(descriptor)
            return port
        }
        let hosts = zip(certificates, ports).map { name, port in
            """
                server {
                    listen 127.0.0.1:\(port) ssl\(http2 ? " http2" : "");
                    server_name localhost;
                    ssl_certificate \(directory)/\(name).pem;
                    ssl_certificate_key \(directory)/\(name).key;
                    # What a current deployment sets: 1.22's default still has TLS 1.0 and lacks 1.3.
                    ssl_protocols TLSv1.2 TLSv1.3;
                    location / { default_type text/plain; return 200 "\(body)"; }
                    \(locations)
                }
            """
        }
        // Every path is under the prefix: nothing of the system's nginx (logs, pid, temp) is touched.
        let configuration = """
            daemon off;
            master_process off;
            error_log \(prefix)/error.log;
            pid \(prefix)/nginx.pid;
            events { worker_connections 64; }
            http {
                access_log \(prefix)/access.log;
                client_body_temp_path \(prefix)/temp/body;
                proxy_temp_path \(prefix)/temp/proxy;
                fastcgi_temp_path \(prefix)/temp/fastcgi;
                uwsgi_temp_path \(prefix)/temp/uwsgi;
                scgi_temp_path \(prefix)/temp/scgi;
            \(hosts.joined(separator: "\n"))
            }
            """
        try configuration.write(toFile: prefix + "/nginx.conf", atomically: true, encoding: .utf8)
        process = Process()
        process.executableURL = URL(fileURLWithPath: Self.executable)
        // -e: the error log before the configuration is read (the default is under /var/log).
        process.arguments = ["-p", prefix, "-c", prefix + "/nginx.conf", "-e", prefix + "/error.log"]
        do {
            _ = try ProcessLaunch.start(process, outputPath: prefix + "/output.log", name: "nginx", timeout: 10) {
                [ports] _ in
                // nginx prints nothing on success: ready once every port accepts.
                ports.allSatisfy { port in
                    guard let descriptor = connectLoopback(port: port) else { return false }
                    close(descriptor)
                    return true
                } ? true : nil
            }
        } catch {
            let log = (try? String(contentsOfFile: prefix + "/error.log", encoding: .utf8)) ?? ""
            throw ProcessLaunch.Failure(message: "\(error); error.log: \(log)")
        }
    }

    deinit {
        // SIGKILL: the test runner's threads block SIGTERM, and an exec'd child inherits the mask.
        kill(process.processIdentifier, SIGKILL)
        process.waitForExit()
    }
}
