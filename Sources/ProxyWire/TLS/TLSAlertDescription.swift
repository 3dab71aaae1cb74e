/// The fatal alerts the proxy sends a device whose ClientHello it refuses to pass on, unread or
/// judged non-compliant after the tunnel opened (RFC 8446 §6.2), each chosen as a TLS server would for the same fault, so the device's TLS stack
/// reports the right kind of error rather than an unexplained end of stream.
package enum TLSAlertDescription: UInt8, Sendable, Equatable {
    /// A record of a kind that may not come here (an empty handshake record, RFC 8446 §5.1).
    case unexpectedMessage = 10
    /// A record longer than 2^14 bytes of plaintext (RFC 8446 §5.1 names this alert).
    case recordOverflow = 22
    /// A handshake the proxy refuses after the tunnel opened: its verdict blocked it (a TLS server
    /// that cannot accept the offer sends this one, so the device reports a failed handshake).
    case handshakeFailure = 40
    /// A hello longer than the proxy reads, which is what OpenSSL answers to one over its own limit.
    case illegalParameter = 47
    /// A hello that cannot be decoded, or never arrives complete.
    case decodeError = 50
    /// A server_name that is not a host name, which is what OpenSSL answers (RFC 6066 §3).
    case unrecognizedName = 112

    /// The whole alert record: content type 21, legacy_record_version 3.3 (RFC 8446 §5.1), length
    /// 2, level 2 (fatal), this description. Sent in plaintext, since no keys were agreed.
    package var fatalRecord: [UInt8] {
        [TLSContentType.alert, 3, 3, 0, 2, 2, rawValue]
    }
}
