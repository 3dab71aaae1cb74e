extension ViolationKind {
    /// The change on the server (or its certificate) that removes this violation, in words: what to
    /// say when no Info.plist key allows it, and the alternative to the key when one does.
    public var serverChange: String {
        switch self {
        case .cleartext: "serve the resource over https://"
        case .tlsVersion: "enable TLS 1.2 or later on the server"
        case .cipherNotForwardSecret, .cipherNotATS:
            "enable an ECDHE suite with AES-GCM or ChaCha20-Poly1305 (TLS 1.2), or TLS 1.3"
        case .keySize: "reissue the certificate with an RSA key of 2048 bits or more, or an ECDSA P-256 key or larger"
        case .signatureHashLeaf: "reissue the leaf certificate signed with SHA-256 or stronger"
        case .signatureHashChain: "serve an intermediate signed with SHA-256 or stronger (the CA's current one)"
        case .untrustedChain:
            "serve the full chain (leaf, then every intermediate) from a CA the device trusts, or install its root"
        case .nameMismatch: "reissue the certificate with the host as a subjectAltName DNS name (or IP address)"
        case .expired: "renew the certificate"
        case .notYetValid: "check the server's clock, or wait for the certificate's start date"
        case .validityTooLong:
            "reissue the leaf with a shorter validity (398 days under a public CA, 825 under a private one)"
        case .noServerAuthEKU:
            "reissue the certificate with extendedKeyUsage serverAuth (and intermediates that allow it)"
        case .pinMismatch: "serve a key the app pins, or update the app's NSPinnedDomains"
        case .certificateTransparency:
            "use a certificate with embedded SCTs from Apple-approved logs, or staple them (TLS extension or OCSP)"
        case .niapExtendedMasterSecret: "enable Extended Master Secret (RFC 7627) on the server"
        case .niapCipher: "enable an ECDHE suite with AES-GCM for TLS 1.2"
        case .niapSignatureAlgorithm: "sign the handshake with a SHA-256 or stronger signature scheme"
        case .handshakeFailure:
            "offer a curve and signature scheme Apple's client offers (X25519 or P-256, ECDSA or RSA-PSS), and read "
                + "a ClientHello over several TCP segments (iOS 26's is about 1.6 KB)"
        case .http2InadequateSecurity:
            "enable an ECDHE suite with AES-GCM or ChaCha20-Poly1305 (TLS 1.2) or TLS 1.3 wherever the server "
                + "offers HTTP/2, or stop offering h2 with CBC suites"
        default: "change the server"
        }
    }
}
