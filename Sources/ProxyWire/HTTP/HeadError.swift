/// Why a message head or body framing was rejected.
///
/// `status` is the status the proxy should answer its client with, and `reason` is one sentence
/// fit for a plain-text body. For requests it is 400, 431, 501 or 505; every problem found in a
/// response is 502, because the client did nothing wrong (RFC 9112 §6.3 rule 5).
package struct HeadError: Error, Sendable, Equatable, CustomStringConvertible {
    package var status: Int
    package var reason: String

    package init(status: Int, reason: String) {
        self.status = status
        self.reason = reason
    }

    /// The standard reason phrase for `status`, for the proxy's own status line.
    package var statusPhrase: String {
        switch status {
        case 400: "Bad Request"
        case 431: "Request Header Fields Too Large"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 505: "HTTP Version Not Supported"
        default: "Error"
        }
    }

    package var description: String { "\(status) \(statusPhrase): \(reason)" }

    /// Malformed syntax: 400 for a request, 502 for a response.
    static func malformed(_ kind: HTTPMessageKind, _ reason: String) -> HeadError {
        HeadError(status: kind == .request ? 400 : 502, reason: reason)
    }

    /// A head over ``HeadLimits``: 431 (RFC 6585 §5) for a request, 502 for a response.
    static func tooLarge(_ kind: HTTPMessageKind, _ reason: String) -> HeadError {
        HeadError(status: kind == .request ? 431 : 502, reason: reason)
    }

    /// An HTTP version other than 1.0 or 1.1: 505 (RFC 9110 §15.6.6) for a request, 502 for a response.
    static func unsupportedVersion(_ kind: HTTPMessageKind, _ reason: String) -> HeadError {
        HeadError(status: kind == .request ? 505 : 502, reason: reason)
    }

    /// A transfer coding the proxy does not know: 501 (RFC 9112 §6.1) for a request, 502 for a response.
    static func notImplemented(_ kind: HTTPMessageKind, _ reason: String) -> HeadError {
        HeadError(status: kind == .request ? 501 : 502, reason: reason)
    }
}
