/// A parsed response head, as an origin (or upstream proxy) sent it.
package struct ResponseHead: Sendable, Hashable {
    /// 1.0 or 1.1.
    package let version: HTTPVersion
    /// 100–999.
    package let status: Int
    /// Possibly empty; carries no meaning (RFC 9112 §4).
    package let reason: String
    /// Editable, so the proxy can add or remove fields before ``serialized(addingVia:)``.
    package var headers: HTTPHeaders
}
