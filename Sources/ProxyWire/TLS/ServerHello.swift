/// What the server chose in its hello (RFC 8446 §4.1.3, RFC 5246 §7.4.1.3).
package struct ServerHello: Sendable, Hashable {
    /// `legacy_version`: always 0x0303 from a TLS 1.3 server (RFC 8446 §4.1.3).
    package var legacyVersion: UInt16
    /// The version in force: the supported_versions extension (43), which in a ServerHello holds
    /// exactly one value (RFC 8446 §4.2.1), else `legacyVersion`.
    package var selectedVersion: UInt16
    package var cipherSuite: UInt16
    /// Every extension type, in the order sent.
    package var extensionTypes: [UInt16]
    /// The extended_master_secret extension (23, RFC 7627) is present.
    package var extendedMasterSecret: Bool
    /// The application_layer_protocol_negotiation extension's one protocol (RFC 7301 §3.1).
    /// Always nil for TLS 1.3, where the server sends ALPN in the encrypted EncryptedExtensions
    /// message (RFC 8446 §4.3.1), not in the ServerHello. Bytes other than printable ASCII and
    /// the backslash are written `\xNN`, so the text is safe to log and lossless.
    package var alpnProtocol: String?
    /// This hello's random is the HelloRetryRequest constant (RFC 8446 §4.1.3): it asks the
    /// client to try again rather than settling anything. The scanner never reports one as its
    /// result; it keeps reading for the real ServerHello.
    package var isHelloRetryRequest: Bool
    /// A HelloRetryRequest came before this ServerHello (costing the client a round trip,
    /// typically because its key share was for a group the server does not accept).
    package var helloRetryRequested: Bool

    package init(
        legacyVersion: UInt16,
        selectedVersion: UInt16,
        cipherSuite: UInt16,
        extensionTypes: [UInt16] = [],
        extendedMasterSecret: Bool = false,
        alpnProtocol: String? = nil,
        isHelloRetryRequest: Bool = false,
        helloRetryRequested: Bool = false
    ) {
        self.legacyVersion = legacyVersion
        self.selectedVersion = selectedVersion
        self.cipherSuite = cipherSuite
        self.extensionTypes = extensionTypes
        self.extendedMasterSecret = extendedMasterSecret
        self.alpnProtocol = alpnProtocol
        self.isHelloRetryRequest = isHelloRetryRequest
        self.helloRetryRequested = helloRetryRequested
    }

    /// Whether the session's keys are bound to the handshake transcript: the
    /// extended_master_secret extension for TLS 1.2 and older (RFC 7627), always for TLS 1.3,
    /// whose key schedule includes the transcript hash by design (RFC 8446 §7.1) and which
    /// therefore never sends the extension. TLS 1.3 drafts (0x7fXX) count as TLS 1.3.
    package var negotiatesExtendedMasterSecret: Bool {
        extendedMasterSecret || selectedVersion == 0x0304 || selectedVersion >> 8 == 0x7F
    }
}
