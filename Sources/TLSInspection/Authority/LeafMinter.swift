internal import COpenSSL

/// A leaf certificate minted for one name, and the credentials that present it.
package struct MintedLeaf: Sendable {
    /// The leaf alone: the device has the root, and there is no intermediate.
    package let credentials: ServerCredentials
    /// Validity, seconds since 1970.
    package let notBefore: Int64
    package let notAfter: Int64
}

/// Mints the leaves intercept mode presents to the device: one per host, signed by the proxy's CA,
/// all sharing one ECDSA P-256 key made when the minter is.
///
/// Why one leaf key for all hosts: generating a key per host would cost ~6 ms (P-256) to ~200 ms
/// (RSA), and the key proves nothing per host. Why not the CA's key, as mitmproxy does: the CA key
/// then only ever signs certificates, and a leaf key that leaks from a process's memory cannot mint
/// (Apple's CVE-2020-9868 concerned shared key material).
///
/// Immutable, so one minter serves every event loop; each loop keeps its own ``LeafCache``.
package struct LeafMinter: Sendable {
    package let authority: CertificateAuthority
    /// The key of every leaf this minter makes; never the CA's.
    package let leafKey: PrivateKey
    /// What this minter and the caches over it have done, counted across every loop.
    package let statistics = LeafStatistics()

    /// Leaves start this far in the past, for devices whose clocks run behind.
    package static let backdate: Int64 = 2 * 86_400
    /// The whole validity window, backdate included. Apple accepts up to 825 days from a
    /// user-installed root (support.apple.com/103769); 199 also keeps under the CA/Browser Forum's
    /// and Chromium's 200-day limit, should a desktop browser be pointed at the same CA (mitmproxy
    /// went to 199 for that reason, PR #8142).
    package static let lifetime: Int64 = 199 * 86_400
    /// The longest name that is also the subject's CN (ub-common-name); longer names are only in the SAN.
    package static let longestCommonName = 64

    /// Makes the leaf key.
    package init(authority: CertificateAuthority) throws(TLSError) {
        self.authority = authority
        self.leafKey = try PrivateKey.generate(.ecdsaP256)
    }

    /// A new leaf for `name`, valid from `now` − 2 days for 199 days.
    ///
    /// Profile: v3, random serial, issuer the CA's subject, CN = the name only when it has at most
    /// 64 characters (iOS reads only the SAN; with no CN the SAN is critical, RFC 5280 §4.2.1.6),
    /// one typed SAN entry, BasicConstraints critical CA:FALSE, KeyUsage critical
    /// digitalSignature (an ECDSA key does no key encipherment), EKU serverAuth (iOS 13 requires it),
    /// authorityKeyIdentifier from the CA, no subjectKeyIdentifier (SChannel breaks when a CA and
    /// its leaf share one: mitmproxy#6494), SHA-256 signed by the CA key.
    ///
    /// - Parameter now: seconds since 1970.
    /// - Throws: when `name` cannot be certified (``LeafName`` says what is allowed) or OpenSSL fails.
    package func mint(for name: LeafName, now: Int64) throws(TLSError) -> MintedLeaf {
        if let problem = name.problem {
            throw TLSError(
                operation: "minting a leaf for \(String(reflecting: name.description))", openSSLErrors: [problem])
        }
        let notBefore = now - Self.backdate
        let notAfter = notBefore + Self.lifetime
        let draft = try CertificateDraft()
        try draft.setRandomSerial()
        try draft.setIssuer(authority.certificate)
        var commonName: String?
        if case .dns(let host) = name, host.utf8.count <= Self.longestCommonName { commonName = host }
        try draft.setSubject(commonName: commonName)
        try draft.setValidity(notBefore: notBefore, notAfter: notAfter)
        try draft.setPublicKey(leafKey)
        try draft.addSubjectAltNames([name], critical: commonName == nil)
        try draft.addExtension(NID_basic_constraints, "critical,CA:FALSE")
        try draft.addExtension(NID_key_usage, "critical,digitalSignature")
        try draft.addExtension(NID_ext_key_usage, "serverAuth")
        try draft.addExtension(NID_authority_key_identifier, "keyid:always", issuer: authority.certificate)
        let leaf = try draft.sign(with: authority.key)
        let minted = MintedLeaf(
            credentials: try ServerCredentials(chain: [leaf], key: leafKey), notBefore: notBefore, notAfter: notAfter)
        statistics.leafMinted()
        return minted
    }
}
