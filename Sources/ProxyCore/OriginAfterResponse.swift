import LogRecord

/// What becomes of the origin connection once a response is complete (``ExchangeEnding/completed(keepClient:origin:)``).
enum OriginAfterResponse: Equatable {
    /// Nothing came beyond the response, and its fields and framing let the connection carry the
    /// client's next request.
    case reusable
    /// The exchange ends the connection: `Connection: close`, a body that ran until the close, a
    /// request body not all sent, or framing too suspect to go on with.
    case closing
    /// The origin sent `bytes` beyond the response's framed end (a body on a HEAD, 204 or 304
    /// answer, more than the Content-Length): read on that connection, they would answer the next
    /// request, so the connection is closed with them unread and never reused. The client has the
    /// response as framed, none of the surplus; `reason` (``Failure/responseSurplus``) goes on the
    /// request's line.
    case surplus(bytes: Int, reason: FailureReason)

    var isReusable: Bool { self == .reusable }

    /// The reason the request's line gives, when the origin sent a surplus.
    var surplusReason: FailureReason? {
        if case .surplus(_, let reason) = self { reason } else { nil }
    }
}
