import Foundation

/// Where a command writes: the terminal in the real binary, buffers in tests.
public final class Output {
    public private(set) var standardOutput = ""
    public private(set) var standardError = ""
    private let streaming: Bool

    /// - Parameter streaming: write straight to the process's stdout and stderr instead of buffering.
    public init(streaming: Bool = false) { self.streaming = streaming }

    public func line(_ text: String = "") { write(text + "\n") }

    public func write(_ text: String) {
        if streaming {
            FileHandle.standardOutput.write(Data(text.utf8))
        } else {
            standardOutput += text
        }
    }

    public func error(_ text: String) {
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
