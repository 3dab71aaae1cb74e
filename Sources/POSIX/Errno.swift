import Glibc

/// What an `errno` value means to a caller that must decide what to do next.
package enum Errno {
    /// EAGAIN or EWOULDBLOCK (the same value on Linux, two names in POSIX): a non-blocking call
    /// would have blocked, or a blocking one's SO_RCVTIMEO or SO_SNDTIMEO passed.
    package static func wouldBlock(_ code: Int32) -> Bool { code == EAGAIN || code == EWOULDBLOCK }

    /// ``wouldBlock(_:)`` or EINTR: nothing failed, try again later.
    package static func isTransient(_ code: Int32) -> Bool { wouldBlock(code) || code == EINTR }

    /// The system's text for `code` (strerror).
    package static func message(_ code: Int32) -> String { String(cString: strerror(code)) }
}
