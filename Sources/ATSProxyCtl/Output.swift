import Foundation

/// Where a command writes: the terminal in the real binary, buffers in tests.
package final class Output {
    /// What was written to standard output: bytes, since `ca export --format der` is binary.
    package private(set) var standardOutputBytes: [UInt8] = []
    package private(set) var standardError = ""
    /// Standard output as UTF-8 text (what every command but a binary export writes).
    package var standardOutput: String { String(decoding: standardOutputBytes, as: UTF8.self) }
    private let streaming: Bool

    /// - Parameter streaming: write straight to the process's stdout and stderr instead of buffering.
    package init(streaming: Bool = false) { self.streaming = streaming }

    package func line(_ text: String = "") { write(text + "\n") }

    package func write(_ text: String) { write(bytes: Array(text.utf8)) }

    /// Writes `bytes` unchanged: binary output.
    package func write(bytes: [UInt8]) {
        if streaming {
            FileHandle.standardOutput.write(Data(bytes))
        } else {
            standardOutputBytes += bytes
        }
    }

    package func error(_ text: String) {
        if streaming {
            FileHandle.standardError.write(Data((text + "\n").utf8))
        } else {
            standardError += text + "\n"
        }
    }
}

/// A subcommand that writes through an ``Output`` and returns its exit status, so tests can run it
/// without a process.
protocol OutputCommand {
    func execute(_ output: Output) -> Int32
}

/// The exit statuses of `atsproxyctl`, as the README documents them.
enum ExitStatus {
    static let success: Int32 = 0
    /// `check --strict` found something; reserved for "the answer is no" elsewhere.
    static let findings: Int32 = 1
    /// A file is missing, unreadable or not a policy; a host or flag is malformed.
    static let badInput: Int32 = 2
    /// No daemon answered on the control socket.
    static let unreachable: Int32 = 3
}
