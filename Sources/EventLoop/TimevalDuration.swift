import Glibc

extension timeval {
    /// A Swift duration as libevent's time limits take it (microsecond precision).
    init(duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self.init(tv_sec: Int(seconds), tv_usec: suseconds_t(attoseconds / 1_000_000_000_000))
    }
}
