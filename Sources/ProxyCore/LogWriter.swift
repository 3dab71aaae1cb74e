import Glibc
import Synchronization

/// Appends one JSON object per line to standard output or a file, from any thread: each line is one
/// `write(2)` under a lock, so lines from different loops never interleave.
public final class LogWriter: Sendable {
    private let descriptor: Mutex<Int32>
    private let failedWrites = Atomic<Int>(0)
    /// The file logged to; nil for standard output.
    public let path: String?

    /// Logs to standard output.
    public init() {
        descriptor = Mutex(STDOUT_FILENO)
        path = nil
    }

    /// Logs to `path`, appending; created with mode 0640 when missing.
    public init(path: String) throws(LogError) {
        descriptor = Mutex(try LogWriter.open(path))
        self.path = path
    }

    private static func open(_ path: String) throws(LogError) -> Int32 {
        let fd = Glibc.open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o640)
        guard fd >= 0 else { throw LogError(path: path, reason: String(cString: strerror(errno))) }
        return fd
    }

    /// Opens the log file's path again (after logrotate moved the file away) and carries on there.
    /// The new file takes over the old descriptor's number with dup2, under the lock, so no line is
    /// lost or split. Does nothing when logging to standard output. On failure the old file stays.
    public func reopen() throws(LogError) {
        guard let path else { return }
        let fresh = try LogWriter.open(path)
        let failure: Int32? = descriptor.withLock { fd in dup2(fresh, fd) < 0 ? errno : nil }
        close(fresh)
        if let failure { throw LogError(path: path, reason: String(cString: strerror(failure))) }
    }

    deinit {
        if path != nil { descriptor.withLock { _ = close($0) } }
    }

    /// Lines that could not be written whole since start (write(2) failed part-way or at once).
    public var writeErrors: Int { failedWrites.load(ordering: .relaxed) }

    public func write(line: String) { write(line: Array(line.utf8)) }

    /// Writes one line (its newline added) with a single write(2) under the lock, so lines from
    /// several loops never interleave. The line is consumed: the newline goes into its own storage
    /// (the log line is built with room to spare) rather than into a copy.
    public func write(line: consuming [UInt8]) {
        var bytes = line
        bytes.append(UInt8(ascii: "\n"))
        descriptor.withLock { fd in
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
                if written < 0, errno == EINTR { continue }
                guard written > 0 else {
                    // The line is lost (a full disk, a closed stdout): nobody to tell but the metrics.
                    failedWrites.add(1, ordering: .relaxed)
                    return
                }
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
