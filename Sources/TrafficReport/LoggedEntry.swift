/// One line of the daemon's log as the live view takes it, in the order written: a line as bytes
/// (a connection, a `connection_open`), or a request line as its record. Request lines come one
/// per HTTP request or HTTP/2 stream, so they come typed: reading each back from JSON cost the
/// proxy more CPU per stream than relaying it.
package enum LoggedEntry: Sendable {
    /// A line as written, without its newline.
    case line([UInt8])
    /// A request or `tls_stream` line, as ``LoggedRequest/init(json:)`` would read it.
    case request(LoggedRequest)
}
