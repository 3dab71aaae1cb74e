/// An HTTP/2 error code, as RST_STREAM and GOAWAY carry it (RFC 9113 §7). Codes this list does not
/// name are kept as they came (`other`): an endpoint must not treat an unknown code as special.
package enum HTTP2ErrorCode: Sendable, Equatable, CustomStringConvertible {
    case noError, protocolError, internalError, flowControlError, settingsTimeout, streamClosed
    case frameSizeError, refusedStream, cancel, compressionError, connectError, enhanceYourCalm
    case inadequateSecurity, http11Required
    case other(UInt32)

    private static let named: [HTTP2ErrorCode] = [
        .noError, .protocolError, .internalError, .flowControlError, .settingsTimeout, .streamClosed,
        .frameSizeError, .refusedStream, .cancel, .compressionError, .connectError, .enhanceYourCalm,
        .inadequateSecurity, .http11Required,
    ]

    package init(rawValue: UInt32) {
        self = rawValue < UInt32(Self.named.count) ? Self.named[Int(rawValue)] : .other(rawValue)
    }

    package var rawValue: UInt32 {
        if case .other(let value) = self { return value }
        return UInt32(Self.named.firstIndex(of: self)!)
    }

    /// The name RFC 9113 gives it (`PROTOCOL_ERROR`), or the number in hex.
    package var description: String {
        switch self {
        case .noError: "NO_ERROR"
        case .protocolError: "PROTOCOL_ERROR"
        case .internalError: "INTERNAL_ERROR"
        case .flowControlError: "FLOW_CONTROL_ERROR"
        case .settingsTimeout: "SETTINGS_TIMEOUT"
        case .streamClosed: "STREAM_CLOSED"
        case .frameSizeError: "FRAME_SIZE_ERROR"
        case .refusedStream: "REFUSED_STREAM"
        case .cancel: "CANCEL"
        case .compressionError: "COMPRESSION_ERROR"
        case .connectError: "CONNECT_ERROR"
        case .enhanceYourCalm: "ENHANCE_YOUR_CALM"
        case .inadequateSecurity: "INADEQUATE_SECURITY"
        case .http11Required: "HTTP_1_1_REQUIRED"
        case .other(let value): "0x" + String(value, radix: 16)
        }
    }
}
