import CNGHTTP2

/// A call into libnghttp2 failed: which call, and the library's own words for why. For the bytes a
/// peer sent (``HTTP2Session/receive(_:)``), the session is then over: the library has queued a
/// GOAWAY where the protocol asks for one, and what is left of its output should still be written.
package struct HTTP2Error: Error, Sendable, Equatable, CustomStringConvertible {
    /// The library's error code (`nghttp2_error`, negative).
    package var code: Int32
    /// The call that failed, such as `nghttp2_session_mem_recv`.
    package var call: String

    package init(code: Int32, call: String) {
        self.code = code
        self.call = call
    }

    /// The library's sentence for the code (`nghttp2_strerror`).
    package var reason: String { String(cString: nghttp2_strerror(code)) }

    package var description: String { "\(call): \(reason)" }

    /// Whether the session can do nothing more (the library's "fatal" errors).
    package var isFatal: Bool { nghttp2_is_fatal(code) != 0 }
}
