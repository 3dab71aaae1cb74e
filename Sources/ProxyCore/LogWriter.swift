import Glibc
import Synchronization

/// Appends one JSON object per line to standard output or a file, from any thread: each line is one
/// `write(2)` under a lock, so lines from different loops never interleave.
public final class LogWriter: Sendable {
    private let descriptor: Mutex<Int32>
    private let ownsDescriptor: Bool

    /// Logs to standard output.
    public init() {
        descriptor = Mutex(STDOUT_FILENO)
        ownsDescriptor = false
    }

    /// Logs to `path`, appending; created with mode 0640 when missing.
    public init(path: String) throws(LogError) {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o640)
        guard fd >= 0 else { throw LogError(path: path, reason: String(cString: strerror(errno))) }
        descriptor = Mutex(fd)
        ownsDescriptor = true
    }

    deinit {
        if ownsDescriptor { descriptor.withLock { _ = close($0) } }
    }

    public func write(line: String) { write(line: Array(line.utf8)) }

    /// Writes one line (its newline added) with a single write(2) under the lock, so lines from
    /// several loops never interleave.
    public func write(line: [UInt8]) {
        var bytes = line
        bytes.append(UInt8(ascii: "\n"))
        descriptor.withLock { fd in
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
        }
    }
}

public struct LogError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var reason: String
    public var description: String { "cannot open the log file \(path): \(reason)" }
}
