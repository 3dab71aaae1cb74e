extension ResponseHead {
    /// The head to send to the client.
    ///
    /// The status line says HTTP/1.1, the proxy's own version (RFC 9110 §2.5), with the origin's
    /// status and reason. Hop-by-hop fields are removed as in
    /// ``RequestHead/headForOrigin(via:)``; Transfer-Encoding and Content-Length stay, except
    /// that Content-Length is dropped next to Transfer-Encoding (RFC 9112 §6.3 rule 3) and
    /// identical repeated values become one. `Via: 1.1 <via>` is appended.
    package func serialized(addingVia via: String) -> [UInt8] {
        let fields = ForwardedFields.prepare(headers, receivedVersion: version, via: via)
        // The SP after the status is required even when the reason is empty (RFC 9112 §4).
        return HeadSerializer.serialize(startLine: "HTTP/1.1 \(status) \(reason)", headers: fields)
    }
}
