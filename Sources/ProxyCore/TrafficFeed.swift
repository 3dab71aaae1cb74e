import POSIX
import Synchronization
import TrafficReport

/// The log lines of the proxy loops on their way to the live view: every loop appends each line it
/// logs (a request line as its record, ``LoggedEntry``); the web listener's loop takes them a few
/// times a second, and sooner when the queue is half full (``whenHalfFull(_:)``). Bounded: when the
/// web side falls behind, the oldest are dropped and counted, so a stalled view never grows the
/// proxy's memory.
package final class TrafficFeed: Sendable {
    private struct Queue {
        var entries: [LoggedEntry] = []
        var dropped = 0
        var halfFull: (@Sendable () -> Void)?
    }

    private let queue = Locked(Queue())
    private let enabled = Atomic<Bool>(false)
    /// The most entries waiting to be taken.
    package let capacity: Int
    /// Where the taker is woken; dropping leaves the queue above it, so it is reached once per filling.
    private let halfCapacity: Int

    /// Whether entries are kept: only while the live view is there to take them (set once the web
    /// listener is bound), so a proxy without one takes no lock and holds nothing.
    package var isEnabled: Bool {
        get { enabled.load(ordering: .relaxed) }
        set { enabled.store(newValue, ordering: .relaxed) }
    }

    package init(capacity: Int = 10_000) {
        self.capacity = max(1, capacity)
        halfCapacity = max(1, capacity / 2)
    }

    /// Sets what the appender calls (on its own thread, outside the feed's lock) when the queue
    /// reaches half its capacity: the taker's wake-up, so that a steady rate of lines above what
    /// one tick holds is taken in time instead of dropped. Called once per filling (for a capacity
    /// of 2 or more; a drop leaves the queue above half): again only after a ``take()``. Nil
    /// removes it.
    package func whenHalfFull(_ wake: (@Sendable () -> Void)?) {
        queue.withLock { $0.halfFull = wake }
    }

    /// Adds one log line (without its newline), from any loop.
    package func append(_ line: [UInt8]) { append(entry: .line(line)) }

    /// Adds one entry, from any loop.
    package func append(entry: LoggedEntry) {
        guard isEnabled else { return }
        let wake = queue.withLock { queue -> (@Sendable () -> Void)? in
            if queue.entries.count >= capacity {
                // Dropping half at once keeps the cost of dropping off the per-line path.
                let excess = queue.entries.count - capacity / 2
                queue.entries.removeFirst(excess)
                queue.dropped += excess
            }
            queue.entries.append(entry)
            return queue.entries.count == halfCapacity ? queue.halfFull : nil
        }
        wake?()
    }

    /// Takes every waiting entry, oldest first, and how many were dropped since the last take.
    package func take() -> (entries: [LoggedEntry], dropped: Int) {
        queue.withLock { queue in
            let taken = (queue.entries, queue.dropped)
            queue.entries = []
            queue.dropped = 0
            return taken
        }
    }
}
