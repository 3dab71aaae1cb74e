/// The facts the TLS layer extracted from one upstream handshake: plain Swift values, so the policy
/// module needs no OpenSSL (the proxy and `atsproxyctl diagnose` fill them in).
public struct ObservedConnection: Sendable, Hashable {
    /// The negotiated version, or nil when no handshake completed.
    public var tlsVersion: TLSVersion?
    /// The negotiated suite, or nil when no handshake completed.
    public var cipherSuite: CipherSuite?
    /// The key-exchange group the handshake used (`x25519`, `X25519MLKEM768`), or nil when none was
    /// (no handshake, a resumed TLS 1.2 session, static RSA) or the facts came from no handshake.
    public var keyExchangeGroup: KeyExchangeGroup?
    /// Whether TLS 1.2 negotiated Extended Master Secret (RFC 7627); nil when unknown.
    public var extendedMasterSecret: Bool?
    /// The signature scheme the server used in the handshake (`rsa_pkcs1_sha1`, `ecdsa_secp256r1_sha256`…),
    /// when known. The NIAP package forbids SHA-1 schemes.
    public var serverSignatureScheme: String?
    /// The validated path, leaf first, the trust anchor last when the chain is trusted. When no
    /// path could be built, the chain as the server sent it.
    public var chain: [CertificateFacts]
    public var trust: ChainTrust
    /// SCTs embedded in the leaf certificate.
    public var embeddedSCTs: Int
    /// SCTs delivered by the TLS extension or OCSP stapling.
    public var deliveredSCTs: Int
    /// When the chain was evaluated, in seconds since 1970-01-01 UTC.
    public var evaluationTime: Int64
    /// The intermediates fetched from CA Issuers URLs because the server left them out, in order.
    public var intermediateFetches: [IntermediateFetch]
    /// The SCTs checked against a CT log list, when one was given; nil: they were only counted.
    public var sctVerification: SCTVerification? = nil
    /// The application protocol the server chose by ALPN (`h2`, `http/1.1`); nil when it chose none,
    /// or the handshake offered none (the probes offer none).
    public var applicationProtocol: String? = nil

    public init(
        tlsVersion: TLSVersion?, cipherSuite: CipherSuite?, keyExchangeGroup: KeyExchangeGroup? = nil,
        extendedMasterSecret: Bool? = nil, serverSignatureScheme: String? = nil, chain: [CertificateFacts],
        trust: ChainTrust, embeddedSCTs: Int = 0, deliveredSCTs: Int = 0, evaluationTime: Int64,
        intermediateFetches: [IntermediateFetch] = []
    ) {
        self.tlsVersion = tlsVersion
        self.cipherSuite = cipherSuite
        self.keyExchangeGroup = keyExchangeGroup
        self.extendedMasterSecret = extendedMasterSecret
        self.serverSignatureScheme = serverSignatureScheme
        self.chain = chain
        self.trust = trust
        self.embeddedSCTs = embeddedSCTs
        self.deliveredSCTs = deliveredSCTs
        self.evaluationTime = evaluationTime
        self.intermediateFetches = intermediateFetches
    }
}

/// The outcome of chain building against the trust anchors.
public enum ChainTrust: Sendable, Hashable {
    /// A path to an anchor of this kind: the last certificate of ``ObservedConnection/chain`` is the
    /// anchor, which may be a root, an intermediate or the leaf itself.
    case anchored(TrustAnchorKind)
    /// No path to a trust anchor; the reason in the TLS library's words, naming the missing issuer
    /// (and where it could have been fetched from) when that is why.
    case untrusted(reason: String)

    /// Chains to a root of the OS store (Apple's "system roots": CT and the 398-day rule apply).
    public static let systemRoot = ChainTrust.anchored(.system)
    /// Chains to an anchor given with `--ca-file` (a user-installed root: exempt from CT, 825 days).
    public static let userInstalledRoot = ChainTrust.anchored(.user)

    /// The anchor's kind, when there is a path to one.
    public var anchorKind: TrustAnchorKind? {
        if case .anchored(let kind) = self { kind } else { nil }
    }
}

/// The three kinds of anchor Apple's trust code tells apart (Apple open source: SecPolicyServer.c), which
/// decide the EKU, validity and CT rules (docs/ats-rules.md, "Default trust").
public enum TrustAnchorKind: String, Sendable, Hashable, CaseIterable {
    /// A root of the OS store (`--system-roots`, `--system-anchor`).
    case system
    /// One of Apple's own roots in the system store: a system root that Apple's CT rule exempts.
    case appleSystem = "apple_system"
    /// Installed and trusted by the user or MDM (`--ca-file`): a company or test CA.
    case user
    /// Set by the app itself with `SecTrustSetAnchorCertificates` (`--app-anchor`), e.g. after a pinning check.
    case app

    /// The system store, Apple's roots included.
    public var isSystem: Bool { self == .system || self == .appleSystem }
}

/// What the ATS rules need to know about one certificate.
public struct CertificateFacts: Sendable, Hashable {
    public enum KeyType: String, Sendable, Hashable {
        case rsa, ec, ed25519, ed448, dsa, other
    }

    /// The hash inside the certificate's signature algorithm.
    public enum SignatureHash: String, Sendable, Hashable, Comparable {
        case md2, md4, md5, sha1, sha224, sha256, sha384, sha512
        /// Algorithms with a built-in hash (Ed25519, Ed448).
        case intrinsic
        case unknown

        private var strength: Int {
            switch self {
            case .md2, .md4, .md5: 0
            case .sha1: 1
            case .sha224: 2
            case .sha256, .intrinsic, .unknown: 3
            case .sha384: 4
            case .sha512: 5
            }
        }

        public static func < (lhs: SignatureHash, rhs: SignatureHash) -> Bool { lhs.strength < rhs.strength }

        /// Rejected by system trust since iOS 13, ATS or not.
        public var isBrokenForTrust: Bool { [.md2, .md4, .md5, .sha1].contains(self) }
        /// Below ATS's SHA-256 floor. A hash the TLS layer could not name (`unknown`) is not judged:
        /// blocking on it would be guessing.
        public var isBelowATSFloor: Bool { isBrokenForTrust || self == .sha224 }
    }

    /// One purpose of an extendedKeyUsage extension (RFC 5280 §4.2.1.12).
    public enum ExtendedKeyUsage: Sendable, Hashable {
        case serverAuth, clientAuth, any
        /// Netscape's or Microsoft's Server Gated Crypto OID, which Apple's loose EKU check still accepts.
        case serverGatedCrypto
        case emailProtection
        /// Any other purpose, by its dotted OID.
        case other(String)

        /// serverAuth, anyExtendedKeyUsage or Server Gated Crypto: what Apple's loose check asks of every
        /// certificate of the path that has the extension (Apple open source: SecPolicyLeafCallbacks.c).
        public var allowsTLSServer: Bool {
            switch self {
            case .serverAuth, .any, .serverGatedCrypto: true
            case .clientAuth, .emailProtection, .other: false
            }
        }
    }

    /// RFC 2253 subject, for logs.
    public var subject: String
    public var keyType: KeyType
    public var keyBits: Int
    /// The signature algorithm's name (`sha256WithRSAEncryption`), for logs.
    public var signatureAlgorithm: String
    public var signatureHash: SignatureHash
    /// Seconds since 1970-01-01 UTC.
    public var notBefore: Int64
    public var notAfter: Int64
    public var dnsNames: [String]
    /// The wildcard names among ``dnsNames`` whose wildcard stands directly over a public suffix of
    /// the Public Suffix List's ICANN section (`*.co.uk`): Apple's `SecDNSMatch` never matches them.
    /// The TLS layer fills it in from Debian's list, so the policy module needs no copy of it.
    public var wildcardsOverPublicSuffix: Set<String>
    public var ipAddresses: [IPAddress]
    /// nil when the certificate has no extendedKeyUsage extension.
    public var extendedKeyUsage: [ExtendedKeyUsage]?
    public var spkiSHA256: SPKIHash?
    /// Subject equals issuer and the signature verifies with its own key: a root.
    public var isSelfSigned: Bool

    public init(
        subject: String, keyType: KeyType, keyBits: Int, signatureAlgorithm: String, signatureHash: SignatureHash,
        notBefore: Int64, notAfter: Int64, dnsNames: [String] = [], wildcardsOverPublicSuffix: Set<String> = [],
        ipAddresses: [IPAddress] = [], extendedKeyUsage: [ExtendedKeyUsage]? = [.serverAuth],
        spkiSHA256: SPKIHash? = nil, isSelfSigned: Bool = false
    ) {
        self.subject = subject
        self.keyType = keyType
        self.keyBits = keyBits
        self.signatureAlgorithm = signatureAlgorithm
        self.signatureHash = signatureHash
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.dnsNames = dnsNames
        self.wildcardsOverPublicSuffix = wildcardsOverPublicSuffix
        self.ipAddresses = ipAddresses
        self.extendedKeyUsage = extendedKeyUsage
        self.spkiSHA256 = spkiSHA256
        self.isSelfSigned = isSelfSigned
    }
}
