/// Which side of the proxy a message came from.
///
/// It decides the status a ``HeadError`` carries: a broken request is the client's fault and is
/// answered with a 4xx/5xx naming the problem, while anything wrong in a response is answered to
/// the client with 502 (RFC 9112 §6.3 rule 5: "the proxy MUST ... send a 502 (Bad Gateway)").
package enum HTTPMessageKind: Sendable, Equatable {
    case request
    case response

    /// The word used in error reasons: "request" or "response".
    var noun: String {
        switch self {
        case .request: "request"
        case .response: "response"
        }
    }
}
