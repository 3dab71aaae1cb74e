import Glibc

extension timeval {
    /// A Swift duration as libevent's time limits take it (microsecond precision). Not POSIX's
    /// `timeval(duration:)`, which the other modules use for socket options: libevent's headers
    /// bring their own import of `struct timeval` into CLibevent, and Swift does not find that
    /// initializer on it here.
    init(duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self.init(tv_sec: Int(seconds), tv_usec: suseconds_t(attoseconds / 1_000_000_000_000))
    }
}
