import Foundation

/// A real `openssl s_server -www` on 127.0.0.1 (a port the kernel picked; -www because plain mode
/// quits at the end of its standard input), stopped when the value
/// goes away. Debian's system OpenSSL settings (TLS 1.2 minimum, security level 2) are switched off
/// with an empty OPENSSL_CONF, so a test can build the weak servers ATS must reject.
public final class TestTLSServer {
    public let port: UInt16
    private let process: Process

    /// - Parameter arguments: s_server options besides -accept (certificate, key, versions, ciphers).
    public init(directory: String, _ arguments: [String]) throws {
        let emptyConfig = directory + "/empty-openssl.cnf"
        let logPath = directory + "/s_server-\(UUID().uuidString).log"
        guard FileManager.default.createFile(atPath: emptyConfig, contents: Data()),
            FileManager.default.createFile(atPath: logPath, contents: Data()),
            let log = FileHandle(forWritingAtPath: logPath)
        else { throw ServerError(message: "cannot create files in \(directory)") }
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["s_server", "-accept", "127.0.0.1:0", "-naccept", "32", "-www"] + arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        var environment = ProcessInfo.processInfo.environment
        environment["OPENSSL_CONF"] = emptyConfig
        process.environment = environment
        // Output goes to a file, never a pipe: a pipe nobody drains would stall the server.
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try log.close()
        // s_server prints "ACCEPT 127.0.0.1:PORT" once it listens.
        let deadline = Date().addingTimeInterval(10)
        var text = ""
        while Date() < deadline {
            text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            if let range = text.range(of: "ACCEPT 127.0.0.1:"),
                let end = text[range.upperBound...].firstIndex(where: \.isNewline),
                let found = UInt16(text[range.upperBound..<end])
            {
                port = found
                return
            }
            guard process.isRunning else { break }
            Thread.sleep(forTimeInterval: 0.02)
        }
        kill(process.processIdentifier, SIGKILL)
        throw ServerError(message: "openssl s_server did not start: \(text)")
    }

    deinit {
        // SIGKILL, not terminate(): the test runner's threads block SIGTERM, and an exec'd child
        // inherits that mask, so s_server would never see it.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    public struct ServerError: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }
}
