/// What a peer did on an ``HTTP2Session``, told while ``HTTP2Session/receive(_:)`` (or, for
/// ``session(_:dataTaken:on:)``, ``HTTP2Session/drainOutput(_:)``) runs. A delegate may submit
/// frames on any session from here, this one included, but must not feed or drain this session
/// from inside its own callbacks.
package protocol HTTP2SessionDelegate: AnyObject {
    /// A whole header list (HEADERS and its CONTINUATIONs): a request, a response (interim or
    /// final), or trailers. `endsStream`: the peer will send nothing more on the stream.
    func session(
        _ session: HTTP2Session, headers: [HTTP2Field], kind: HTTP2HeadersKind, on stream: Int32, endsStream: Bool)
    /// Body bytes of a stream, valid only during the call. The peer's window for them reopens only
    /// as ``HTTP2Session/consumed(_:on:)`` says they were taken.
    func session(_ session: HTTP2Session, data: UnsafeRawBufferPointer, on stream: Int32)
    /// The peer ended the stream's body (END_STREAM on DATA).
    func session(_ session: HTTP2Session, endedDataOn stream: Int32)
    /// The stream is closed both ways: ended, reset by either end (`code`), or refused.
    func session(_ session: HTTP2Session, closed stream: Int32, code: HTTP2ErrorCode, reason: HTTP2StreamReset?)
    /// `count` bytes queued with ``HTTP2Session/send(_:on:)`` went into DATA frames: room for more.
    func session(_ session: HTTP2Session, dataTaken count: Int, on stream: Int32)
    /// This end's END_STREAM on the stream went out (on DATA, HEADERS or trailers): told while
    /// ``HTTP2Session/drainOutput(_:)`` runs. Nothing by default.
    func session(_ session: HTTP2Session, sentEndOf stream: Int32)
    /// The peer is going away: streams above `lastStream` were not and will not be processed.
    func session(_ session: HTTP2Session, goAway lastStream: Int32, code: HTTP2ErrorCode, debug: [UInt8])
    /// The peer's SETTINGS arrived (its stream limit may have changed).
    func sessionReceivedSettings(_ session: HTTP2Session)
}

extension HTTP2SessionDelegate {
    package func session(_ session: HTTP2Session, sentEndOf stream: Int32) {}
}

/// What a header list is, as the library classifies it.
package enum HTTP2HeadersKind: Sendable, Equatable {
    /// The first header list of a stream the peer opened (a client's request).
    case request
    /// The first header list of a response (1xx or final) on a stream this end opened.
    case response
    /// A later header list: a final response after 1xx, or trailers (`endsStream`).
    case headers
}

/// Why the session itself reset a stream, beyond the peer's own RST_STREAM.
///
/// `head`: the `:method` and `:path` of the header list the reset cut short, as far as they came
/// (each up to 2 KiB), so the stream's owner can say what the peer was asking for; empty when the
/// reset came after the list was delivered, or before either.
package enum HTTP2StreamReset: Sendable, Equatable {
    /// The header list was larger than SETTINGS_MAX_HEADER_LIST_SIZE allows (`size` octets so far).
    case headerListTooLarge(size: Int, head: [HTTP2Field])
    /// The library reset the stream with `code` because the peer broke HTTP/2's rules on it: a
    /// field the protocol forbids or malforms, pseudo-header fields out of place, a body that
    /// disagrees with its content-length, a stream past the limit. `why` says which, in words.
    case brokeRules(code: HTTP2ErrorCode, why: String, head: [HTTP2Field])
}
