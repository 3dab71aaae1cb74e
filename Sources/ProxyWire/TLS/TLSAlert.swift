/// A plaintext alert record's two bytes (RFC 8446 §6, RFC 5246 §7.2), as seen when a peer
/// refuses the handshake before any hello: a server that shares no version or cipher suite with
/// the client answers the ClientHello with `fatal handshake_failure` or `fatal protocol_version`.
struct TLSAlert: Equatable {
    let level: UInt8
    let description: UInt8

    /// "fatal handshake_failure".
    var summary: String { levelName + " " + descriptionName }

    var levelName: String {
        switch level {
        case 1: "warning"
        case 2: "fatal"
        default: "level \(level)"
        }
    }

    /// AlertDescription names from RFC 8446 §6 plus the TLS 1.2-era ones of RFC 5246 §7.2.
    var descriptionName: String {
        switch description {
        case 0: "close_notify"
        case 10: "unexpected_message"
        case 20: "bad_record_mac"
        case 21: "decryption_failed"
        case 22: "record_overflow"
        case 30: "decompression_failure"
        case 40: "handshake_failure"
        case 41: "no_certificate"
        case 42: "bad_certificate"
        case 43: "unsupported_certificate"
        case 44: "certificate_revoked"
        case 45: "certificate_expired"
        case 46: "certificate_unknown"
        case 47: "illegal_parameter"
        case 48: "unknown_ca"
        case 49: "access_denied"
        case 50: "decode_error"
        case 51: "decrypt_error"
        case 60: "export_restriction"
        case 70: "protocol_version"
        case 71: "insufficient_security"
        case 80: "internal_error"
        case 86: "inappropriate_fallback"
        case 90: "user_canceled"
        case 100: "no_renegotiation"
        case 109: "missing_extension"
        case 110: "unsupported_extension"
        case 111: "certificate_unobtainable"
        case 112: "unrecognized_name"
        case 113: "bad_certificate_status_response"
        case 114: "bad_certificate_hash_value"
        case 115: "unknown_psk_identity"
        case 116: "certificate_required"
        case 120: "no_application_protocol"
        default: "unknown alert \(description)"
        }
    }
}
