import Foundation

/// A server a test writes as a script (Python, usually), run until it prints `PORT <n>` and killed
/// when the value goes away: the one way the process tests start their own servers and forwarders.
package final class TestScriptServer {
    /// The port the script said it listens on.
    package let port: UInt16
    private let process: Process

    /// - Parameters:
    ///   - interpreter: the program that runs the script (a Python).
    ///   - arguments: the interpreter's arguments (`-c`, the script's text, its own arguments; or a path).
    ///   - output: where what the script prints goes (a file, read for the port).
    ///   - name: what the failure to start calls it.
    package init(interpreter: String, _ arguments: [String], output: String, name: String) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: interpreter)
        process.arguments = arguments
        port = try ProcessLaunch.start(process, outputPath: output, name: name) {
            ProcessLaunch.port(after: "PORT ", in: $0)
        }
    }

    deinit {
        kill(process.processIdentifier, SIGKILL)
        process.waitForExit()
    }
}
