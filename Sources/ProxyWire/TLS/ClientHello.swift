/// What a client offered in its first hello (RFC 8446 §4.1.2, RFC 5246 §7.4.1.2).
///
/// Lists keep the client's order and any GREASE values (RFC 8701): order and GREASE are what
/// client fingerprints are made of. Use `isGREASE(_:)` to drop them.
package struct ClientHello: Sendable, Hashable {
    /// `legacy_version`: 0x0303 from a TLS 1.3 client (RFC 8446 §4.1.2), which puts its real
    /// versions in `supportedVersions`.
    package var legacyVersion: UInt16
    /// The supported_versions extension (43), client's preference order; empty when absent.
    package var supportedVersions: [UInt16]
    package var cipherSuites: [UInt16]
    /// The server_name extension's (0) host_name (RFC 6066 §3), as sent; nil when absent.
    package var serverName: String?
    /// The application_layer_protocol_negotiation extension (16), in preference order.
    /// Bytes other than printable ASCII are written `\xNN` (see `alpnProtocol` on ServerHello).
    package var alpnProtocols: [String]
    /// Every extension type, in the order sent.
    package var extensionTypes: [UInt16]
    /// The extended_master_secret extension (23, RFC 7627) is present.
    package var supportsExtendedMasterSecret: Bool
    /// The signature_algorithms extension (13): SignatureScheme values.
    package var signatureAlgorithms: [UInt16]
    /// The supported_groups extension (10): NamedGroup values.
    package var supportedGroups: [UInt16]
    /// Sent in the SSL 2.0 record format that old clients used to reach SSLv2 servers
    /// (RFC 5246 Appendix E.2). Such a hello carries no extensions, so only `legacyVersion` and
    /// `cipherSuites` (the specs whose first byte is 0) are filled in.
    package var isSSLv2Compatible: Bool

    package init(
        legacyVersion: UInt16,
        supportedVersions: [UInt16] = [],
        cipherSuites: [UInt16] = [],
        serverName: String? = nil,
        alpnProtocols: [String] = [],
        extensionTypes: [UInt16] = [],
        supportsExtendedMasterSecret: Bool = false,
        signatureAlgorithms: [UInt16] = [],
        supportedGroups: [UInt16] = [],
        isSSLv2Compatible: Bool = false
    ) {
        self.legacyVersion = legacyVersion
        self.supportedVersions = supportedVersions
        self.cipherSuites = cipherSuites
        self.serverName = serverName
        self.alpnProtocols = alpnProtocols
        self.extensionTypes = extensionTypes
        self.supportsExtendedMasterSecret = supportsExtendedMasterSecret
        self.signatureAlgorithms = signatureAlgorithms
        self.supportedGroups = supportedGroups
        self.isSSLv2Compatible = isSSLv2Compatible
    }

    /// The newest version the client offers: the largest non-GREASE supported_versions entry,
    /// else `legacyVersion` (which is how TLS 1.2 and older clients say it, RFC 5246 §7.4.1.2).
    package var highestVersion: UInt16 {
        supportedVersions.filter { !isGREASE($0) }.max() ?? legacyVersion
    }
}
