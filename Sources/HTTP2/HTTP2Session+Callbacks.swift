import CNGHTTP2

/// libnghttp2's callbacks: C functions that recover their ``HTTP2Session`` from the context pointer
/// the session was made with, and tell its delegate.
extension HTTP2Session {
    fileprivate static func owner(_ context: UnsafeMutableRawPointer?) -> HTTP2Session {
        Unmanaged<HTTP2Session>.fromOpaque(context!).takeUnretainedValue()
    }

    private static var temporalFailure: Int32 { NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue }

    static func install(in callbacks: OpaquePointer?) {
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, context in
            guard let frame else { return 0 }
            HTTP2Session.owner(context).incomingHeaders = (frame.pointee.hd.stream_id, ReceivedHeaderList())
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) {
            _, frame, name, nameLength, value, valueLength, _, context in
            guard let frame, let name, let value else { return 0 }
            return HTTP2Session.owner(context).header(
                on: frame.pointee.hd.stream_id, name: UnsafeBufferPointer(start: name, count: nameLength),
                value: UnsafeBufferPointer(start: value, count: valueLength))
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, context in
            guard let frame else { return 0 }
            HTTP2Session.owner(context).received(frame.pointee)
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) {
            _, _, stream, data, length, context in
            let session = HTTP2Session.owner(context)
            session.unconsumed[stream, default: 0] += length
            session.delegate.session(session, data: UnsafeRawBufferPointer(start: data, count: length), on: stream)
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, context in
            guard let frame else { return 0 }
            HTTP2Session.owner(context).sent(frame.pointee)
            return 0
        }
        nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(callbacks) { _, frame, error, context in
            guard let frame else { return 0 }
            HTTP2Session.owner(context).invalid(frame.pointee, libraryError: error)
            return 0
        }
        nghttp2_session_callbacks_set_error_callback2(callbacks) { _, _, message, length, context in
            guard let message else { return 0 }
            let text = UnsafeRawBufferPointer(start: message, count: length)
            HTTP2Session.owner(context).lastLibraryError = String(decoding: text.prefix(300), as: UTF8.self)
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, stream, code, context in
            HTTP2Session.owner(context).closed(stream, code: HTTP2ErrorCode(rawValue: code))
            return 0
        }
    }

    /// One field of a header list: kept, unless the list outgrew SETTINGS_MAX_HEADER_LIST_SIZE, which
    /// resets the stream (the library then drops the rest of the list, however it is sent: an HPACK
    /// bomb expands into nothing held).
    private func header(on stream: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) -> Int32
    {
        guard let size = incomingHeaders?.list.size(adding: name.count, value.count), incomingHeaders?.stream == stream
        else { return 0 }
        guard size <= Int(settings.maxHeaderListSize) else {
            let head = incomingHeaders?.list.requestHead ?? []
            incomingHeaders = nil
            resets[stream] = .headerListTooLarge(size: size, head: head)
            return Self.temporalFailure
        }
        // Changed in place: a copy taken out would share the list's storage, and appending to it
        // would copy the whole list.
        incomingHeaders?.list.append(name: name, value: value)
        return 0
    }

    /// A frame went out. The library's own GOAWAY (a flood, a reset storm, a broken frame) is
    /// noted, so the owner learns why the connection is ending; so is its own RST_STREAM, so the
    /// stream's close says why (``HTTP2StreamReset/brokeRules(code:why:)``).
    private func sent(_ frame: nghttp2_frame) {
        let stream = frame.hd.stream_id
        switch UInt32(frame.hd.type) {
        case NGHTTP2_DATA.rawValue, NGHTTP2_HEADERS.rawValue:
            guard frame.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 else { return }
            delegate.session(self, sentEndOf: stream)
            // This end's END_STREAM is out: a reset that waited for it follows it (a peer that ended
            // its side too has nothing more to stop).
            guard let code = resetsAfterEnd.removeValue(forKey: stream),
                nghttp2_session_get_stream_remote_close(sessionPointer, stream) == 0
            else { return }
            reset(stream, code: code)
        case NGHTTP2_GOAWAY.rawValue:
            if goAwaySent == nil || goAwaySent == .noError {
                goAwaySent = HTTP2ErrorCode(rawValue: frame.goaway.error_code)
            }
        case NGHTTP2_RST_STREAM.rawValue:
            let invalid = invalidFrames.removeValue(forKey: stream)
            // A stream the library never opened (refused at once) has no close to tell: nothing is kept.
            guard resetsAsked.remove(stream) == nil, resets[stream] == nil,
                nghttp2_session_find_stream(sessionPointer, stream) != nil
            else { return }
            let code = HTTP2ErrorCode(rawValue: frame.rst_stream.error_code)
            resets[stream] = .brokeRules(
                code: code, why: invalid?.why ?? Self.libraryReset(code), head: invalid?.head ?? [])
        default:
            return
        }
    }

    /// The library found a frame it received wrong and will reset its stream: why, in words.
    private func invalid(_ frame: nghttp2_frame, libraryError: Int32) {
        let stream = frame.hd.stream_id
        guard stream != 0 else { return }
        // The error callback's message came just before, for a field: its name (never its value,
        // which may be a credential) says which.
        let field = lastLibraryError.flatMap(Self.fieldName(in:))
        lastLibraryError = nil
        // The list the frame was cut from, when it is the one under way: what it asked for so far.
        let head = incomingHeaders?.stream == stream ? incomingHeaders?.list.requestHead ?? [] : []
        let why =
            switch libraryError {
            case NGHTTP2_ERR_HTTP_HEADER.rawValue:
                "a header field HTTP/2 forbids or malforms (RFC 9113 §8.2)" + (field.map { ": \($0)" } ?? "")
            case NGHTTP2_ERR_HTTP_MESSAGING.rawValue:
                "a message that breaks RFC 9113 §8.1 (its pseudo-header fields, or a body that disagrees with its content-length)"
            default:
                "a frame HTTP/2 does not allow there (\(String(cString: nghttp2_strerror(libraryError))))"
            }
        invalidFrames[stream] = (why, head)
    }

    /// The field's name in the library's message "… name: [NAME], value: […]", when it is there.
    static func fieldName(in message: String) -> String? {
        let bytes = Array(message.utf8)
        let marker = Array("name: [".utf8)
        guard bytes.count > marker.count else { return nil }
        for start in 0...(bytes.count - marker.count) where bytes[start..<(start + marker.count)].elementsEqual(marker)
        {
            let name = bytes[(start + marker.count)...].prefix { $0 != UInt8(ascii: "]") }
            guard start + marker.count + name.count < bytes.count else { return nil }
            return String(decoding: name, as: UTF8.self)
        }
        return nil
    }

    private static func libraryReset(_ code: HTTP2ErrorCode) -> String {
        switch code {
        case .refusedStream: "a stream past the streams allowed at once (REFUSED_STREAM)"
        case .flowControlError: "more body than the window allowed (FLOW_CONTROL_ERROR)"
        case .streamClosed: "a frame on a stream already closed (STREAM_CLOSED)"
        // What libnghttp2 resets without naming the frame: a body longer or shorter than its
        // content-length is the usual one (nghttp2_http_on_remote_end_stream, on_data_chunk).
        case .protocolError:
            "a stream that broke HTTP/2's rules (a body longer or shorter than its content-length, or a frame out of place)"
        default: "a frame that broke HTTP/2 (\(code))"
        }
    }

    private func received(_ frame: nghttp2_frame) {
        let stream = frame.hd.stream_id
        let endsStream = frame.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        switch UInt32(frame.hd.type) {
        case NGHTTP2_HEADERS.rawValue:
            guard let (received, list) = incomingHeaders, received == stream else { return }
            incomingHeaders = nil
            let kind: HTTP2HeadersKind =
                switch frame.headers.cat {
                case NGHTTP2_HCAT_REQUEST: .request
                case NGHTTP2_HCAT_RESPONSE: .response
                default: .headers
                }
            delegate.session(self, headers: list.fields, kind: kind, on: stream, endsStream: endsStream)
        case NGHTTP2_DATA.rawValue where endsStream:
            delegate.session(self, endedDataOn: stream)
        case NGHTTP2_GOAWAY.rawValue:
            let goaway = frame.goaway
            let debug = goaway.opaque_data.map { Array(UnsafeBufferPointer(start: $0, count: goaway.opaque_data_len)) }
            delegate.session(
                self, goAway: goaway.last_stream_id, code: HTTP2ErrorCode(rawValue: goaway.error_code),
                debug: debug ?? [])
        case NGHTTP2_SETTINGS.rawValue where frame.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0:
            delegate.sessionReceivedSettings(self)
        default:
            return
        }
    }

    private func closed(_ stream: Int32, code: HTTP2ErrorCode) {
        // Bytes the caller will never pass on: the connection's window gets them back, unless the
        // caller still holds them and says when they are gone (``returnsUnconsumedOnClose``).
        if let left = unconsumed.removeValue(forKey: stream), left > 0, returnsUnconsumedOnClose {
            _ = nghttp2_session_consume_connection(sessionPointer, left)
        }
        if incomingHeaders?.stream == stream { incomingHeaders = nil }
        outputs[stream] = nil
        resetsAsked.remove(stream)
        resetsAfterEnd[stream] = nil
        invalidFrames[stream] = nil
        delegate.session(self, closed: stream, code: code, reason: resets.removeValue(forKey: stream))
    }

    /// The data provider every stream with a body is submitted with: it reads the stream's
    /// ``StreamOutput``; when that is empty and open, the stream waits (deferred) until
    /// ``send(_:on:)`` or ``finish(_:trailers:)`` resumes it.
    var dataProvider: nghttp2_data_provider {
        nghttp2_data_provider(source: nghttp2_data_source(ptr: nil)) {
            _, stream, buffer, length, flags, _, context in
            let session = HTTP2Session.owner(context)
            return session.provideData(on: stream, into: buffer!, length: length, flags: flags!)
        }
    }

    private func provideData(
        on stream: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int, flags: UnsafeMutablePointer<UInt32>
    ) -> Int {
        // Taken in place, through the index: a copy out would share the bytes' storage with the
        // dictionary's, and taking from it would copy them all.
        guard let index = outputs.index(forKey: stream) else {
            return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
        }
        let taken = outputs.values[index].take(into: buffer, length: length)
        let left = outputs.values[index].count
        let end = outputs.values[index].end
        if taken > 0 { delegate.session(self, dataTaken: taken, on: stream) }
        guard left == 0 else { return taken }
        switch end {
        case .open:
            return taken > 0 ? taken : Int(NGHTTP2_ERR_DEFERRED.rawValue)
        case .ended(let trailers):
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            if !trailers.isEmpty {
                // END_STREAM travels on the trailers' HEADERS instead (submitted from here, as the
                // library documents).
                flags.pointee |= NGHTTP2_DATA_FLAG_NO_END_STREAM.rawValue
                _ = trailers.withNameValues { nghttp2_submit_trailer(sessionPointer, stream, $0, $1) }
            }
            return taken
        }
    }
}
