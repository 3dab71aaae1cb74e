import CNGHTTP2

/// One end of one HTTP/2 connection, in memory: the peer's bytes go in through ``receive(_:)``,
/// what the session has to say comes out of ``drainOutput(_:)``, and what happened is told to the
/// ``HTTP2SessionDelegate``. libnghttp2 does the framing, HPACK, flow control and the protocol's
/// defences; this type owns its `nghttp2_session` (freed in `deinit`, the one place) and the body
/// bytes queued for each stream. It does no I/O: the caller moves the bytes. Not thread-safe: one
/// loop uses it.
///
/// Flow control is the caller's: body bytes received open the peer's window again only once
/// ``consumed(_:on:)`` says they were passed on, so a relay's memory per stream stays within the
/// window it announced.
package final class HTTP2Session {
    package enum Role: Sendable { case client, server }

    package let role: Role
    package let settings: HTTP2Settings
    package unowned let delegate: any HTTP2SessionDelegate
    /// Set in `init`, freed in `deinit`.
    private var session: OpaquePointer!
    /// Body bytes queued per stream and not yet framed, and how each body ends.
    var outputs: [Int32: StreamOutput] = [:]
    /// The header list being received, and its stream. One at a time: a header block's frames are
    /// contiguous on the connection (RFC 9113 §4.3), so a list ends, or is dropped with its stream,
    /// before the next begins.
    var incomingHeaders: (stream: Int32, list: ReceivedHeaderList)?
    /// Body bytes received per stream and not yet ``consumed(_:on:)``: given back to the connection's
    /// window when the stream closes with some left, when ``returnsUnconsumedOnClose``.
    var unconsumed: [Int32: Int] = [:]
    /// Whether a stream's unconsumed bytes reopen the connection's window when it closes (true), or
    /// only as the caller says it let them go (``consumedAfterClose(_:)``): a relay still holding a
    /// closed stream's bytes for a slow peer keeps the connection's window shut meanwhile.
    package var returnsUnconsumedOnClose = true
    /// Streams this session reset itself, and why (told with their close).
    var resets: [Int32: HTTP2StreamReset] = [:]
    /// Streams the caller reset (``reset(_:code:)``): any other RST_STREAM this session sends is the
    /// library's own.
    var resetsAsked: Set<Int32> = []
    /// Streams to reset once this end has sent their END_STREAM (``resetAfterEnd(_:code:)``).
    var resetsAfterEnd: [Int32: HTTP2ErrorCode] = [:]
    /// What the library last found wrong with a frame it received, by stream, and the pseudo-header
    /// fields of the header list it cut short: the RST_STREAM it sends for it says why with these.
    var invalidFrames: [Int32: (why: String, head: [HTTP2Field])] = [:]
    /// The library's last error message (its error callback), to name the field at fault.
    var lastLibraryError: String?
    /// The code of the GOAWAY this session sent, once it sent one (an error code wins over NO_ERROR):
    /// the library sends one of its own when the peer breaks the protocol or floods it.
    package internal(set) var goAwaySent: HTTP2ErrorCode?

    /// - Throws: ``HTTP2Error`` when the library cannot make the session (out of memory).
    package init(role: Role, settings: HTTP2Settings = HTTP2Settings(), delegate: any HTTP2SessionDelegate)
        throws(HTTP2Error)
    {
        self.role = role
        self.settings = settings
        self.delegate = delegate
        var callbacks: OpaquePointer?
        try Self.check(nghttp2_session_callbacks_new(&callbacks), "nghttp2_session_callbacks_new")
        defer { nghttp2_session_callbacks_del(callbacks) }
        Self.install(in: callbacks)
        var option: OpaquePointer?
        try Self.check(nghttp2_option_new(&option), "nghttp2_option_new")
        defer { nghttp2_option_del(option) }
        nghttp2_option_set_no_auto_window_update(option, 1)
        nghttp2_option_set_max_outbound_ack(option, settings.maxOutboundAcks)
        nghttp2_option_set_stream_reset_rate_limit(option, settings.streamResetBurst, settings.streamResetsPerSecond)
        nghttp2_option_set_max_continuations(option, settings.maxContinuations)
        // Until the server's SETTINGS say otherwise, a client opens no more than RFC 9113 §6.5.2's
        // suggested 100 at once, rather than the library's unlimited default.
        if role == .client { nghttp2_option_set_peer_max_concurrent_streams(option, 100) }
        var made: OpaquePointer?
        let context = Unmanaged.passUnretained(self).toOpaque()
        let result =
            role == .server
            ? nghttp2_session_server_new2(&made, callbacks, context, option)
            : nghttp2_session_client_new2(&made, callbacks, context, option)
        try Self.check(result, role == .server ? "nghttp2_session_server_new2" : "nghttp2_session_client_new2")
        session = made
        try announceSettings()
    }

    deinit { nghttp2_session_del(session) }

    /// The library's session, for the callbacks.
    var sessionPointer: OpaquePointer { session }

    private func announceSettings() throws(HTTP2Error) {
        var entries: [nghttp2_settings_entry] = [
            entry(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, settings.maxConcurrentStreams),
            entry(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, settings.initialWindowSize),
            entry(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, settings.maxHeaderListSize),
            entry(NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, settings.headerTableSize),
        ]
        // A client refuses pushes (the proxy never relays one); a server may offer extended CONNECT.
        if role == .client { entries.append(entry(NGHTTP2_SETTINGS_ENABLE_PUSH, 0)) }
        if role == .server, settings.enableConnectProtocol {
            entries.append(entry(NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL, 1))
        }
        try Self.check(
            nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), entries, entries.count),
            "nghttp2_submit_settings")
        if settings.connectionWindowSize > 65_535 {
            try Self.check(
                nghttp2_session_set_local_window_size(
                    session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, Int32(clamping: settings.connectionWindowSize)),
                "nghttp2_session_set_local_window_size")
        }
    }

    private func entry(_ id: nghttp2_settings_id, _ value: UInt32) -> nghttp2_settings_entry {
        nghttp2_settings_entry(settings_id: Int32(id.rawValue), value: value)
    }

    // MARK: - Bytes in and out

    /// Feeds the peer's bytes (all of them: the library buffers what a frame still lacks).
    /// - Throws: ``HTTP2Error`` when the bytes break the protocol badly enough to end the session
    ///   (a GOAWAY is queued: drain the output, then close), or a callback failed.
    package func receive(_ bytes: UnsafeRawBufferPointer) throws(HTTP2Error) {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), !bytes.isEmpty else { return }
        let result = nghttp2_session_mem_recv(session, base, bytes.count)
        if result < 0 { throw HTTP2Error(code: Int32(result), call: "nghttp2_session_mem_recv") }
    }

    /// Hands `write` every byte the session has to send now, in pieces valid only during each call.
    package func drainOutput(_ write: (UnsafeRawBufferPointer) -> Void) throws(HTTP2Error) {
        while true {
            var data: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &data)
            if count < 0 { throw HTTP2Error(code: Int32(count), call: "nghttp2_session_mem_send") }
            guard count > 0, let data else { return }
            write(UnsafeRawBufferPointer(start: data, count: count))
        }
    }

    /// Whether the session still reads, or has something to write; neither: the connection is over.
    package var wantsRead: Bool { nghttp2_session_want_read(session) != 0 }
    package var wantsWrite: Bool { nghttp2_session_want_write(session) != 0 }

    // MARK: - Streams

    /// Opens a stream with a request (client only); with `body`, its bytes follow through
    /// ``send(_:on:)`` and ``finish(_:trailers:)``. Returns the stream's id.
    package func submitRequest(_ fields: [HTTP2Field], hasBody: Bool) throws(HTTP2Error) -> Int32 {
        let stream = withUnsafePointer(to: dataProvider) { provider in
            fields.withNameValues { values, count in
                nghttp2_submit_request(session, nil, values, count, hasBody ? provider : nil, nil)
            }
        }
        try Self.check(stream, "nghttp2_submit_request")
        if hasBody { outputs[stream] = StreamOutput() }
        return stream
    }

    /// Answers a stream with a final response (server only); with `hasBody`, as ``submitRequest(_:hasBody:)``.
    package func submitResponse(_ fields: [HTTP2Field], on stream: Int32, hasBody: Bool) throws(HTTP2Error) {
        if hasBody { outputs[stream] = StreamOutput() }
        let result = withUnsafePointer(to: dataProvider) { provider in
            fields.withNameValues { values, count in
                nghttp2_submit_response(session, stream, values, count, hasBody ? provider : nil)
            }
        }
        if result != 0 { outputs[stream] = nil }
        try Self.check(result, "nghttp2_submit_response")
    }

    /// A header list that is not the stream's first or its trailers: an interim (1xx) response.
    package func submitInterim(_ fields: [HTTP2Field], on stream: Int32) throws(HTTP2Error) {
        let result = fields.withNameValues { values, count in
            nghttp2_submit_headers(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream, nil, values, count, nil)
        }
        try Self.check(result, "nghttp2_submit_headers")
    }

    /// Queues body bytes for a stream submitted with a body; they go out as the peer's windows allow,
    /// and ``HTTP2SessionDelegate/session(_:dataTaken:on:)`` says when.
    package func send(_ bytes: UnsafeRawBufferPointer, on stream: Int32) {
        guard outputs[stream] != nil, !bytes.isEmpty else { return }
        outputs[stream]?.append(bytes)
        resume(stream)
    }

    /// Ends a stream's body, with trailers when there are any (gRPC's status travels in them).
    package func finish(_ stream: Int32, trailers: [HTTP2Field] = []) {
        guard outputs[stream] != nil else { return }
        outputs[stream]?.end = .ended(trailers: trailers)
        resume(stream)
    }

    /// Body bytes queued for the stream and not yet framed: the caller's backpressure.
    package func queuedBytes(on stream: Int32) -> Int { outputs[stream]?.count ?? 0 }

    /// Says that `count` body bytes received on the stream were passed on: the peer may send as many again.
    package func consumed(_ count: Int, on stream: Int32) {
        guard count > 0, let left = unconsumed[stream] else { return }
        let taken = min(count, left)
        unconsumed[stream] = left - taken
        _ = nghttp2_session_consume(session, stream, taken)
    }

    /// Says that `count` body bytes of a stream that has closed were passed on or dropped: the
    /// connection's window opens by as many (see ``returnsUnconsumedOnClose``).
    package func consumedAfterClose(_ count: Int) {
        guard count > 0 else { return }
        _ = nghttp2_session_consume_connection(session, count)
    }

    /// Resets a stream (RST_STREAM); its close is told to the delegate like any other.
    package func reset(_ stream: Int32, code: HTTP2ErrorCode) {
        // Noted only for a stream the library holds: its close forgets it.
        if nghttp2_session_find_stream(session, stream) != nil { resetsAsked.insert(stream) }
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream, code.rawValue)
    }

    /// Resets `stream` with `code` once this end has sent END_STREAM on it (at once when it has):
    /// how a server that has answered a request whole asks the client to stop sending the rest of
    /// it (RFC 9113 §8.1, with NO_ERROR), without cutting off the answer still queued.
    package func resetAfterEnd(_ stream: Int32, code: HTTP2ErrorCode) {
        if nghttp2_session_get_stream_local_close(session, stream) == 1 {
            reset(stream, code: code)
        } else if nghttp2_session_find_stream(session, stream) != nil {
            resetsAfterEnd[stream] = code
        }
    }

    /// Ends the connection gracefully: GOAWAY naming the last stream the session processed.
    package func goAway(code: HTTP2ErrorCode, debug: String = "") {
        let last = nghttp2_session_get_last_proc_stream_id(session)
        let text = Array(debug.utf8)
        _ = text.withUnsafeBufferPointer {
            nghttp2_submit_goaway(
                session, UInt8(NGHTTP2_FLAG_NONE.rawValue), last, code.rawValue, $0.baseAddress, $0.count)
        }
    }

    /// A PING (its ACK keeps an idle connection's NAT and the peer's idle timer awake).
    package func ping() {
        _ = nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
    }

    /// How many streams the peer lets this end open at once (SETTINGS_MAX_CONCURRENT_STREAMS).
    package var peerMaxConcurrentStreams: UInt32 {
        nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
    }

    /// Whether the peer accepts server push (SETTINGS_ENABLE_PUSH; a client's default is 1).
    package var peerAllowsPush: Bool {
        nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_ENABLE_PUSH) == 1
    }

    /// Whether the peer allows extended CONNECT (RFC 8441's SETTINGS_ENABLE_CONNECT_PROTOCOL).
    package var peerAllowsExtendedConnect: Bool {
        nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL) == 1
    }

    private func resume(_ stream: Int32) { _ = nghttp2_session_resume_data(session, stream) }

    static func check(_ result: Int32, _ call: String) throws(HTTP2Error) {
        if result < 0 { throw HTTP2Error(code: result, call: call) }
    }
}

extension [HTTP2Field] {
    /// Calls `body` with the fields as `nghttp2_nv`s, valid during the call (the library copies them).
    func withNameValues<Result>(_ body: (UnsafePointer<nghttp2_nv>, Int) -> Result) -> Result {
        guard !isEmpty else {
            var none = nghttp2_nv()
            return body(&none, 0)
        }
        var storage: [UInt8] = []
        storage.reserveCapacity(reduce(0) { $0 + $1.name.count + $1.value.count })
        // Appended one after the other: `name + value` would make a third array per field.
        for field in self {
            storage.append(contentsOf: field.name)
            storage.append(contentsOf: field.value)
        }
        return storage.withUnsafeMutableBufferPointer { buffer in
            var values: [nghttp2_nv] = []
            values.reserveCapacity(count)
            var offset = 0
            for field in self {
                let name = buffer.baseAddress! + offset
                let value = name + field.name.count
                offset += field.name.count + field.value.count
                values.append(
                    nghttp2_nv(
                        name: name, value: value, namelen: field.name.count, valuelen: field.value.count,
                        flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)))
            }
            return values.withUnsafeBufferPointer { body($0.baseAddress!, $0.count) }
        }
    }
}
