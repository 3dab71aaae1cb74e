/// What a `TLSHelloScanner` knows after the bytes fed so far.
///
/// Every case except `needMoreData` is final: once a scanner reports one, it keeps returning it
/// and ignores further bytes.
package enum TLSScanState: Sendable, Equatable {
    /// The bytes so far are a consistent prefix of a TLS hello; feed more.
    case needMoreData
    /// The first bytes are not a TLS handshake record (an HTTP request line, an SSH banner…),
    /// so the proxy should treat the tunnel as cleartext. The reason names the deciding byte.
    case notTLS(reason: String)
    /// The client's first hello (client-to-server direction).
    case clientHello(ClientHello)
    /// The server's hello that settles the session: after a HelloRetryRequest this is the
    /// second ServerHello, with `helloRetryRequested` set (server-to-client direction).
    case serverHello(ServerHello)
    /// TLS framing, but no usable hello: malformed, over the buffering limit, an alert
    /// instead of a hello, or a stream that ended early. The reason names the field or alert.
    case failed(reason: String)
}
