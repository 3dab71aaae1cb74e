internal import COpenSSL
import ATSPolicy

/// What both ends can tell about a session, whichever role they play. (A client's full view of
/// the server, chain and trust included, is ``TLSStream/outcome(now:)``.)
extension TLSStream {
    /// The version agreed on; nil until the handshake is complete.
    public var negotiatedVersion: TLSVersion? {
        guard isHandshakeComplete else { return nil }
        return TLSVersion(wireValue: UInt16(truncatingIfNeeded: SSL_version(ssl)))
    }

    /// The suite agreed on; nil until the handshake is complete.
    public var negotiatedCipher: CipherSuite? {
        guard isHandshakeComplete, let cipher = SSL_get_current_cipher(ssl) else { return nil }
        return CipherSuite(id: UInt16(truncatingIfNeeded: SSL_CIPHER_get_protocol_id(cipher)))
    }

    /// The SNI name: the one a client sends, or, on a server, the one its client sent (known once
    /// the ClientHello is read; nil when it sent none).
    public var serverName: String? {
        SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name).map { String(cString: $0) }
    }
}
