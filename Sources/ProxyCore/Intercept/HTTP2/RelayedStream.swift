import HTTP2

/// One request stream of an intercepted HTTP/2 connection, from the device's HEADERS until its line
/// is logged: its twin on the origin's connection, and the line being filled.
///
/// A class: the relay changes a stream on every frame, and its record is large (thirty-odd fields,
/// most of them reference-counted). As a value in the relay's dictionary each lookup that was not
/// written through an index copied and destroyed it whole: 4% of the proxy's CPU per stream.
/// Loop-confined, as its ``HTTP2Relay``.
final class RelayedStream {
    /// What the stream's twin on the origin's connection is.
    enum Twin: Equatable {
        /// Submitted to the origin (its id there; the library holds the HEADERS while the origin's
        /// SETTINGS_MAX_CONCURRENT_STREAMS is reached, and sends them as streams close).
        case open(Int32)
        /// The origin's stream closed (ended, or reset: `code`); the device's may still be sending.
        case closed(HTTP2ErrorCode)
        /// Answered by the proxy itself (a refusal, a block): nothing went to the origin.
        case none
    }

    var record: RequestRecord
    /// When the HEADERS came (``MonotonicClock`` milliseconds).
    let startedAt: Int64
    var twin: Twin
    /// The device ended its side of the stream (END_STREAM on HEADERS, DATA or trailers).
    var requestEnded = false
    /// A final (non-1xx) response was submitted to the device.
    var answered = false
    /// The origin ended its response (END_STREAM on its final HEADERS, DATA or trailers).
    var responseEnded = false
    /// The origin answered whole and reset its stream with NO_ERROR before the request's end: the
    /// device is reset the same way once its answer is out, and what it sends meanwhile is dropped
    /// without reopening its windows.
    var stopping = false
    /// Response body bytes received from the origin and not yet framed for the device: the origin's
    /// connection window stays shut by as many until they are, even once the origin's stream closed.
    var responseBytesHeld = 0
    /// Request body bytes received from the device and not yet framed for the origin: the device's
    /// windows reopen by as many as they are, or when the origin's stream closes without them.
    var requestBytesHeld = 0

    init(record: RequestRecord, startedAt: Int64, twin: Twin, requestEnded: Bool = false) {
        self.record = record
        self.startedAt = startedAt
        self.twin = twin
        self.requestEnded = requestEnded
    }

    /// The twin's id while it is open.
    var originID: Int32? {
        if case .open(let id) = twin { return id }
        return nil
    }
}

extension RequestRecord {
    /// A final response's facts from its header list: status, type, time to the first byte, gRPC's
    /// status when the response ends with its headers (trailers-only), and the headers when logged.
    mutating func noteResponse(
        status code: Int, _ fields: [HTTP2Field], endsStream: Bool, timeToFirstByte: Int64,
        headers: InterceptSettings
    ) {
        status = code
        contentType = fields.value(of: "content-type")
        timeToFirstByteMilliseconds = timeToFirstByte
        responseHeadBytes = -1
        if endsStream { noteGRPC(in: fields) }
        if headers.logHeaders {
            responseHeaders = RequestRecord.loggedHeaders(
                fields.map { ($0.nameText, $0.valueText) }, logSecrets: headers.logSecrets)
        }
    }

    /// gRPC's status and message from a header list (trailers, or a trailers-only response), when it
    /// carries them.
    mutating func noteGRPC(in fields: [HTTP2Field]) {
        if let status = fields.first(named: "grpc-status") {
            grpcStatus = Int(status.valueText)
        }
        if let message = fields.first(named: "grpc-message") {
            // grpc-message is percent-encoded (gRPC's PROTOCOL-HTTP2.md); the log shows it decoded.
            grpcMessage = message.valueText.removingPercentEncodingOrSelf
        }
    }
}

extension String {
    /// The string with `%XX` escapes decoded, or itself when they do not make UTF-8.
    fileprivate var removingPercentEncodingOrSelf: String {
        var bytes: [UInt8] = []
        var index = utf8.startIndex
        while index != utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%"), let high = utf8.index(index, offsetBy: 1, limitedBy: utf8.endIndex),
                high != utf8.endIndex, let low = utf8.index(high, offsetBy: 1, limitedBy: utf8.endIndex),
                low != utf8.endIndex,
                let value = UInt8(String(decoding: [utf8[high], utf8[low]], as: UTF8.self), radix: 16)
            {
                bytes.append(value)
                index = utf8.index(after: low)
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        return String(validating: bytes, as: UTF8.self) ?? self
    }
}
