/// Fires when none of the connections it watches has moved a byte, in either direction, for its
/// limit: the idle timeout of a tunnel or an exchange, where one side may stay silent for as long
/// as the other is busy (a download sends nothing up; an upload gets nothing back).
///
/// Bytes that wait for a reader to take them are not idleness: a reader that pauses (curl's
/// `--limit-rate` reads what the kernel holds, then sleeps for seconds) holds the whole transfer
/// still while it flows on average. Such a stall ends the watch only after the stall limit.
///
/// One timer event, armed for the limit and re-armed only when it comes due, never per byte: each
/// ``SocketStream`` notes when it last read or wrote (``SocketStream/lastActivity``), and the check at
/// the due time either fires or waits for what is left of the limit after the latest of those.
/// A flowing connection so costs one check per limit, an idle one exactly one.
///
/// Loop-confined, like the connections it watches. The single owner of its ``Timer``.
package final class IdleTimer {
    /// Why the watch ended.
    package enum Ending: Sendable, Equatable {
        /// No byte moved, and none waited, for the limit.
        case idle
        /// Bytes waited for a reader that took none of them for the stall limit.
        case stalled
    }

    private var timer: Timer?
    private var limit: Int64 = 0
    private var stallLimit: Int64 = 0
    /// When watching began: a connection that has not moved a byte since counts as idle from here.
    private var since: Int64 = 0
    private var watched: [any ByteStream] = []
    private var onIdle: ((Ending) -> Void)?

    package init(base: EventBase) throws(EventError) {
        timer = try Timer(base: base) { [unowned self] in comeDue() }
    }

    /// Whether it is watching (started and neither stopped nor fired).
    package var isWatching: Bool { onIdle != nil }

    /// Watches `connections` from now on (replacing what it watched before): `onIdle` runs once, from
    /// the loop, when none of them has moved a byte for `limit` with none waiting, or when bytes have
    /// waited for a reader that took none for `stallLimit` (at least `limit`).
    package func start(
        limit: Duration, stallLimit: Duration, watching connections: [any ByteStream],
        onIdle: @escaping (Ending) -> Void
    ) {
        self.limit = max(1, limit.milliseconds)
        self.stallLimit = max(self.limit, stallLimit.milliseconds)
        since = MonotonicClock.nowMilliseconds()
        watched = connections
        self.onIdle = onIdle
        timer?.schedule(after: .milliseconds(self.limit))
    }

    /// Stops watching; nothing fires.
    package func stop() {
        timer?.cancel()
        watched = []
        onIdle = nil
    }

    private func comeDue() {
        guard let onIdle else { return }
        let lastActivity = watched.reduce(since) { max($0, $1.lastActivity) }
        let idleFor = MonotonicClock.nowMilliseconds() - lastActivity
        guard idleFor >= limit else {
            timer?.schedule(after: .milliseconds(limit - idleFor))
            return
        }
        let stalled = watched.contains { $0.hasBytesWaiting }
        if stalled, idleFor < stallLimit {
            // Looked at again each limit: once the bytes are taken, plain idleness counts from then.
            timer?.schedule(after: .milliseconds(min(limit, stallLimit - idleFor)))
            return
        }
        stop()
        onIdle(stalled ? .stalled : .idle)
    }
}
