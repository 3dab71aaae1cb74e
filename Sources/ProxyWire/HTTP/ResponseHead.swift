/// A parsed response head, as an origin (or upstream proxy) sent it.
public struct ResponseHead: Sendable, Hashable {
    /// 1.0 or 1.1.
    public let version: HTTPVersion
    /// 100–999.
    public let status: Int
    /// Possibly empty; carries no meaning (RFC 9112 §4).
    public let reason: String
    /// Editable, so the proxy can add or remove fields before ``serialized(addingVia:)``.
    public var headers: HTTPHeaders

    init(version: HTTPVersion, status: Int, reason: String, headers: HTTPHeaders) {
        self.version = version
        self.status = status
        self.reason = reason
        self.headers = headers
    }
}
