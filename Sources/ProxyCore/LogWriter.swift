import Glibc
import POSIX
import Synchronization

/// Appends one JSON object per line to standard output or a file, from any thread: each line, or a
/// loop's batch of whole lines (``LogBatch``), is one `write(2)` under a lock, so lines from
/// different loops never interleave.
package final class LogWriter: Sendable {
    /// The descriptor, and what the last writes left behind.
    private struct State {
        var fd: Int32
        /// A write failed part-way: the file ends in a piece of a line, which the next line must
        /// not be glued to (it starts with a newline instead, so the piece stands alone and is skipped).
        var torn = false
        /// Lines lost since the failure was said on stderr; nil while writes succeed.
        var lostSinceReport: Int?
    }

    private let descriptor: Locked<State>
    private let failedWrites = Atomic<Int>(0)
    /// The file logged to; nil for standard output.
    package let path: String?

    /// Logs to standard output.
    package init() {
        descriptor = Locked(State(fd: STDOUT_FILENO))
        path = nil
    }

    /// Logs to `path`, appending; created with mode 0640 when missing.
    package init(path: String) throws(LogError) {
        descriptor = Locked(State(fd: try LogWriter.open(path)))
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
    package func reopen() throws(LogError) {
        guard let path else { return }
        let fresh = try LogWriter.open(path)
        let failure: Int32? = descriptor.withLock { state in
            guard dup2(fresh, state.fd) >= 0 else { return errno }
            state.torn = false  // A new file: nothing to end.
            return nil
        }
        close(fresh)
        if let failure { throw LogError(path: path, reason: String(cString: strerror(failure))) }
    }

    deinit {
        if path != nil { descriptor.withLock { _ = close($0.fd) } }
    }

    /// Lines that could not be written whole since start (write(2) failed part-way or at once).
    package var writeErrors: Int { failedWrites.load(ordering: .relaxed) }

    package func write(line: String) { write(line: Array(line.utf8)) }

    /// Writes one line (its newline added) with a single write(2) under the lock, so lines from
    /// several loops never interleave. The line is consumed: the newline goes into its own storage
    /// (the log line is built with room to spare) rather than into a copy.
    package func write(line: consuming [UInt8]) {
        var bytes = line
        bytes.append(UInt8(ascii: "\n"))
        write(lines: bytes, count: 1)
    }

    /// Writes `count` whole lines, each ending in its newline, with a single write(2) under the
    /// lock (``LogBatch``). When write(2) fails part-way, the lines it did not finish are counted
    /// lost, each once; those written whole stay.
    package func write(lines bytes: borrowing [UInt8], count: Int) {
        descriptor.withLock { state in
            // The piece a failed write left ends here, so the next line starts whole.
            if state.torn {
                guard writeAll([UInt8(ascii: "\n")], to: &state, lines: count) else { return }
                state.torn = false
            }
            guard writeAll(bytes, to: &state, lines: count) else { return }
            if let lost = state.lostSinceReport {
                state.lostSinceReport = nil
                say(
                    "atsproxy: the log \(path ?? "(standard output)") is written again; \(lost) line\(lost == 1 ? " was" : "s were") lost"
                )
            }
        }
    }

    /// Writes `bytes` whole, retrying on EINTR; false when write(2) fails, the lines it did not
    /// finish counted lost (`lines` of them when nothing was written).
    private func writeAll(_ bytes: borrowing [UInt8], to state: inout State, lines: Int) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes {
                Glibc.write(state.fd, $0.baseAddress! + offset, $0.count - offset)
            }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else {
                let code = written < 0 ? errno : ENOSPC
                // Lines written whole are in the file; the rest, a piece of one among them, are lost.
                let lost = offset == 0 ? lines : bytes[offset...].count { $0 == UInt8(ascii: "\n") }
                failedWrites.add(lost, ordering: .relaxed)
                if offset > 0, bytes[offset - 1] != UInt8(ascii: "\n") { state.torn = true }
                // Said once per burst of failures, not once per line.
                if let already = state.lostSinceReport {
                    state.lostSinceReport = already + lost
                } else {
                    state.lostSinceReport = lost
                    say(
                        "atsproxy: cannot write the log \(path ?? "(standard output)"): \(String(cString: strerror(code))); "
                            + "lines are lost until it can (counted as log write errors in atsproxyctl stats and /metrics)"
                    )
                }
                return false
            }
            offset += written
        }
        return true
    }

    /// A line on stderr (the operator's channel; stdout may be the log itself).
    private func say(_ message: String) {
        var text = Array((message + "\n").utf8)
        _ = text.withUnsafeMutableBytes { Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}

package struct LogError: Error, Sendable, CustomStringConvertible {
    package var path: String
    package var reason: String
    package var description: String { "cannot open the log file \(path): \(reason)" }
}
