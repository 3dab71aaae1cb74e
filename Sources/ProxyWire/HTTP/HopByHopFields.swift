/// Removes the fields that describe one connection and must not be forwarded on the next one
/// (RFC 9110 §7.6.1).
enum HopByHopFields {
    /// Always removed: Connection itself, the fields RFC 9110 §7.6.1 names as connection-specific
    /// (Proxy-Connection, Keep-Alive, TE, Upgrade), the proxy credentials (RFC 9110 §11.7) and
    /// Trailer, as RFC 2616 §13.5.1 listed it. Transfer-Encoding is kept although §7.6.1 calls it
    /// hop-by-hop: the proxy relays bodies without re-framing them, so the framing must travel
    /// with them.
    static let alwaysRemoved: Set<String> = [
        "connection", "proxy-connection", "keep-alive", "proxy-authorization", "proxy-authenticate", "te", "trailer",
        "upgrade",
    ]

    /// Fields a Connection option cannot remove: they frame the body or name the origin, and
    /// letting a client strip them with `Connection: content-length` would make the proxy and the
    /// origin disagree about the message (RFC 9110 §7.6.1: "a sender MUST NOT send a connection
    /// option corresponding to a field that is intended for all recipients of the content").
    static let protectedFromConnectionOptions: Set<String> = ["transfer-encoding", "content-length", "host"]

    static func removing(from headers: HTTPHeaders) -> HTTPHeaders {
        let named = FramingFields.connectionOptions(headers).subtracting(protectedFromConnectionOptions)
        let removed = alwaysRemoved.union(named)
        var result = headers
        result.removeAll { removed.contains(HTTPSyntax.lowercased($0.name)) }
        return result
    }
}
