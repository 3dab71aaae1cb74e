import EventLoop

/// A loop's held log lines, written together: one `write(2)` for the lines of the HTTP/2 streams one
/// read ended, where a write per line had been the relay's most frequent system call (bench-h2:
/// 5,010 writes for 5,000 streams, against 1,111 `sendmsg`).
///
/// The holder writes them (``flush()``) before the bytes that end those streams, so a client never
/// has its answer before its line is in the log; a connection line flushes them ahead of itself.
/// A timer of no delay writes what is still held on the loop's next turn, so a line never waits for
/// more lines. The live view gets each line at once, from the caller. Loop-confined: one per
/// ``ProxyServer``.
final class LogBatch {
    private let writer: LogWriter
    /// The waiting lines, each with its newline.
    private var bytes: [UInt8] = []
    private var lines = 0
    /// Fires on the loop's next turn while lines wait; nil once the loop is ending (or without a
    /// timer), when each line is written at once.
    private var turn: (any LoopTimer)?
    /// Written at once past this, so a burst holds a bounded buffer.
    static let limit = 64 * 1024

    /// - Parameter makeTimer: the loop's one-shot timer, given the flush to run; nil writes each
    ///   line at once.
    init(writer: LogWriter, makeTimer: (@escaping () -> Void) -> (any LoopTimer)?) {
        self.writer = writer
        turn = nil
        turn = makeTimer { [unowned self] in flush() }
    }

    /// The lines still waiting are written: nothing is lost when the server goes without a last turn.
    deinit { flush() }

    func append(_ line: consuming [UInt8]) {
        guard let turn else { return writer.write(line: line) }
        if lines == 0 { turn.schedule(after: .zero) }
        bytes.append(contentsOf: line)
        bytes.append(UInt8(ascii: "\n"))
        lines += 1
        if bytes.count >= Self.limit { flush() }
    }

    /// Writes `line` now, after the waiting lines (in the same write when there are some).
    func writeNow(_ line: consuming [UInt8]) {
        guard lines > 0 else { return writer.write(line: line) }
        append(line)
        flush()
    }

    /// Writes the waiting lines now.
    func flush() {
        guard lines > 0 else { return }
        turn?.cancel()
        writer.write(lines: bytes, count: lines)
        bytes.removeAll(keepingCapacity: bytes.capacity <= Self.limit * 2)
        lines = 0
    }

    /// The loop is ending: the waiting lines are written, and each later one at once.
    func writeThrough() {
        flush()
        turn = nil
    }
}
