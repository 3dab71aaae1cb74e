import Glibc

/// Milliseconds on the system's coarse monotonic clock: for measuring how long something has been
/// idle or in progress, never for the time of day.
///
/// `CLOCK_MONOTONIC_COARSE` is read from the vDSO without a system call, so a connection can note
/// the time of every read and write; it ticks every few milliseconds, the clock libevent's own
/// timeouts run on (without `EVENT_BASE_FLAG_PRECISE_TIMER`), which is what these times are
/// compared against.
package enum MonotonicClock {
    package static func nowMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}

extension Duration {
    /// The duration in whole milliseconds (timeouts, time to live).
    package var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
