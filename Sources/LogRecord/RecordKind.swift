/// A line's `kind`. A line without one is a connection line (tunnel mode wrote none before the
/// field existed).
package enum RecordKind: String, Sendable, CaseIterable {
    case connection
    /// A connection's fields while it is still open: never logged, only fed to the live view.
    case connectionOpen = "connection_open"
    /// One HTTP request inside an intercepted connection.
    case request
    /// Bytes inside an intercepted TLS connection that were not HTTP, relayed as they came.
    case tlsStream = "tls_stream"

    /// Whether the kind is a request line's (docs/request-log.md) rather than a connection line's.
    package var isRequest: Bool { self == .request || self == .tlsStream }
}
