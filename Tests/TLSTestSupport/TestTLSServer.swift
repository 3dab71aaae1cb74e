import Foundation

/// A real `openssl s_server -www` on 127.0.0.1 (a port the kernel picked; -www because plain mode
/// quits at the end of its standard input), stopped when the value
/// goes away. Debian's system OpenSSL settings (TLS 1.2 minimum, security level 2) are switched off
/// with an empty OPENSSL_CONF, so a test can build the weak servers ATS must reject.
package final class TestTLSServer {
    package let port: UInt16
    private let process: Process

    /// - Parameters:
    ///   - arguments: s_server options besides -accept (certificate, key, versions, ciphers).
    ///   - host: the IPv4 address to listen on (another loopback address, 127.0.0.2, for a second
    ///     server at the same port); `port` 0 lets the kernel pick.
    ///   - wrapper: runs it (`ip netns exec NAME`: in a test's network namespace).
    package init(
        directory: String, _ arguments: [String], host: String = "127.0.0.1", port requested: UInt16 = 0,
        wrapper: [String] = []
    ) throws {
        let emptyConfig = directory + "/empty-openssl.cnf"
        guard FileManager.default.createFile(atPath: emptyConfig, contents: Data()) else {
            throw ServerError(message: "cannot create files in \(directory)")
        }
        process = Process()
        let command =
            wrapper + ["/usr/bin/openssl", "s_server", "-accept", "\(host):\(requested)", "-naccept", "1000", "-www"]
            + arguments
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        var environment = ProcessInfo.processInfo.environment
        environment["OPENSSL_CONF"] = emptyConfig
        process.environment = environment
        // s_server prints "ACCEPT HOST:PORT" once it listens on a port it was given as 0, and a bare
        // "ACCEPT" line on a port it was given.
        port = try ProcessLaunch.start(
            process, outputPath: directory + "/s_server-\(UUID().uuidString).log", name: "openssl s_server", timeout: 10
        ) { text in
            requested == 0
                ? ProcessLaunch.port(after: "ACCEPT \(host):", in: text) : text.contains("ACCEPT") ? requested : nil
        }
    }

    deinit {
        // SIGKILL, not terminate(): the test runner's threads block SIGTERM, and an exec'd child
        // inherits that mask, so s_server would never see it.
        kill(process.processIdentifier, SIGKILL)
        process.waitForExit()
    }

    package struct ServerError: Error, CustomStringConvertible {
        package var message: String
        package var description: String { message }
    }
}
