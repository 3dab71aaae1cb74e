import Glibc

extension timeval {
    /// A Swift duration as libevent's time limits and SO_RCVTIMEO/SO_SNDTIMEO take it (microsecond
    /// precision).
    package init(duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self.init(tv_sec: Int(seconds), tv_usec: suseconds_t(attoseconds / 1_000_000_000_000))
    }
}
