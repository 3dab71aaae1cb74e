/// How the end of a message body is found (RFC 9112 §6.3).
package enum BodyFraming: Sendable, Hashable {
    /// No body follows the head.
    case none
    /// Exactly this many bytes follow.
    case contentLength(UInt64)
    /// A chunked body follows; relay it through ``ChunkedBodyScanner``.
    case chunked
    /// The body runs until the origin closes the connection (responses only).
    case untilClose
}
