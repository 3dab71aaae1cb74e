import LogRecord
import TLSInspection

/// How a device's handshake with the proxy's minted certificate ended without a request, as its
/// line says it. Only two endings say the device refused the certificate, and only those count
/// towards passing the host through for that device (``ClientRejections``): a certificate alert,
/// and a handshake completed then closed before any byte (an app checking its pins after the
/// handshake). An old client, a scanner or a flaky network says nothing about the certificate, so
/// it must not turn interception off.
enum DeviceHandshakeFailure: Equatable {
    /// The device sent a certificate alert: it does not trust the proxy's CA.
    case rejectedCertificate(alert: String)
    /// The device completed the handshake, then closed before sending a byte.
    case closedAfterHandshake
    /// The device offered no TLS version the proxy's device side speaks (1.2 and 1.3).
    case noSharedVersion(String)
    /// The device offered no suite or group the proxy's device side accepts.
    case noSharedCipher(String)
    /// The device sent another alert (not about the certificate).
    case alert(name: String, String)
    /// The device closed or reset the connection in the middle of the handshake, without an alert.
    case reset(String)
    /// The device did not complete the handshake within the handshake timeout.
    case timedOut
    /// Anything else OpenSSL refused in the device's handshake (a malformed message).
    case failed(String)

    /// The alerts that say the device refused the certificate (RFC 8446 §6.2): bad_certificate,
    /// certificate_unknown, unknown_ca.
    static let certificateAlerts: Set<UInt8> = [42, 46, 48]

    /// The ending of a device handshake that failed with `error`.
    init(_ error: TLSStreamError) {
        switch (error.kind, error.cause) {
        case (_, .peerAlert(let number)) where Self.certificateAlerts.contains(number):
            self = .rejectedCertificate(alert: Self.alertName(number))
        case (_, .peerAlert(let number)):
            self = .alert(name: Self.alertName(number), error.reason)
        case (_, .noSharedVersion):
            self = .noSharedVersion(error.reason)
        case (_, .noSharedCipher):
            self = .noSharedCipher(error.reason)
        case (.peerClosed, _):
            self = .reset(error.reason)
        default:
            self = .failed(error.reason)
        }
    }

    /// Whether this ending counts as the device refusing the minted certificate.
    var isCertificateRejection: Bool {
        switch self {
        case .rejectedCertificate, .closedAfterHandshake: true
        default: false
        }
    }

    /// The line's `failure` (and `intercept_failed`).
    var failure: Failure {
        switch self {
        case .rejectedCertificate, .closedAfterHandshake: .clientRejectedCertificate
        case .noSharedVersion: .clientTLSVersion
        case .noSharedCipher: .clientNoSharedCipher
        case .alert, .failed: .clientHandshakeFailed
        case .reset: .clientReset
        case .timedOut: .clientHandshakeTimeout
        }
    }

    /// The alert the device sent, for the line's `client_alert`.
    var alert: String? {
        switch self {
        case .rejectedCertificate(let alert), .alert(let alert, _): alert
        default: nil
        }
    }

    /// The line's sentence, for the certificate minted for `serverName`.
    func sentence(serverName: String, timeout: Duration) -> String {
        switch self {
        case .rejectedCertificate(let alert):
            "the device rejected the proxy's certificate for \(serverName) (alert \(alert)): "
                + "trust the atsproxy CA on the device, or the app pins its certificates"
        case .closedAfterHandshake:
            "the device closed the connection right after its handshake with the proxy's certificate for "
                + "\(serverName), before sending any request: the app may pin its certificates"
        case .noSharedVersion(let reason):
            "the device offered no TLS version the proxy accepts (TLS 1.2 and 1.3, as ATS requires): \(reason)"
        case .noSharedCipher(let reason):
            "the device offered no cipher suite or group the proxy accepts (forward-secret AEAD suites; "
                + "X25519, P-256, P-384): \(reason)"
        case .alert(let name, let reason):
            "the device ended its handshake with alert \(name): \(reason)"
        case .reset(let reason):
            "the device closed the connection during its TLS handshake, without an alert: \(reason)"
        case .timedOut:
            "the device did not complete its TLS handshake in \(timeout.logText)"
        case .failed(let reason):
            "the device's TLS handshake failed: \(reason)"
        }
    }

    /// An alert's name as the log writes it (RFC 8446 §6 and RFC 5246 §7.2, snake case).
    static func alertName(_ number: UInt8) -> String {
        alertNames[number] ?? "alert_\(number)"
    }

    private static let alertNames: [UInt8: String] = [
        0: "close_notify", 10: "unexpected_message", 20: "bad_record_mac", 22: "record_overflow",
        40: "handshake_failure", 42: "bad_certificate", 43: "unsupported_certificate", 44: "certificate_revoked",
        45: "certificate_expired", 46: "certificate_unknown", 47: "illegal_parameter", 48: "unknown_ca",
        49: "access_denied", 50: "decode_error", 51: "decrypt_error", 70: "protocol_version",
        71: "insufficient_security", 80: "internal_error", 86: "inappropriate_fallback", 90: "user_canceled",
        109: "missing_extension", 110: "unsupported_extension", 112: "unrecognized_name",
        113: "bad_certificate_status_response", 115: "unknown_psk_identity", 116: "certificate_required",
        120: "no_application_protocol",
    ]
}
