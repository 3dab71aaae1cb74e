/// The facts the TLS layer extracted from one upstream handshake: plain Swift values, so the policy
/// module needs no OpenSSL (the proxy and `atsproxyctl diagnose` fill them in).
public struct ObservedConnection: Sendable, Hashable {
    /// The negotiated version, or nil when no handshake completed.
    public var tlsVersion: TLSVersion?
    /// The negotiated suite, or nil when no handshake completed.
    public var cipherSuite: CipherSuite?
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

    public init(
        tlsVersion: TLSVersion?, cipherSuite: CipherSuite?, extendedMasterSecret: Bool? = nil,
        serverSignatureScheme: String? = nil, chain: [CertificateFacts], trust: ChainTrust, embeddedSCTs: Int = 0,
        deliveredSCTs: Int = 0, evaluationTime: Int64
    ) {
        self.tlsVersion = tlsVersion
        self.cipherSuite = cipherSuite
        self.extendedMasterSecret = extendedMasterSecret
        self.serverSignatureScheme = serverSignatureScheme
        self.chain = chain
        self.trust = trust
        self.embeddedSCTs = embeddedSCTs
        self.deliveredSCTs = deliveredSCTs
        self.evaluationTime = evaluationTime
    }
}

/// The outcome of chain building against the trust anchors.
public enum ChainTrust: Sendable, Hashable {
    /// Chains to a root of the system store (Apple's "system roots": CT and the 398-day rule apply).
    case systemRoot
    /// Chains to an anchor given with `--ca-file` (a user-installed root: exempt from CT, 825 days).
    case userInstalledRoot
    /// No path to a trust anchor; the reason in the TLS library's words.
    case untrusted(reason: String)
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

    public enum ExtendedKeyUsage: Sendable, Hashable {
        case serverAuth, clientAuth, any
        case other(String)
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
    public var ipAddresses: [IPAddress]
    /// nil when the certificate has no extendedKeyUsage extension.
    public var extendedKeyUsage: [ExtendedKeyUsage]?
    public var spkiSHA256: SPKIHash?
    /// Subject equals issuer and the signature verifies with its own key: a root.
    public var isSelfSigned: Bool

    public init(
        subject: String, keyType: KeyType, keyBits: Int, signatureAlgorithm: String, signatureHash: SignatureHash,
        notBefore: Int64, notAfter: Int64, dnsNames: [String] = [], ipAddresses: [IPAddress] = [],
        extendedKeyUsage: [ExtendedKeyUsage]? = [.serverAuth], spkiSHA256: SPKIHash? = nil, isSelfSigned: Bool = false
    ) {
        self.subject = subject
        self.keyType = keyType
        self.keyBits = keyBits
        self.signatureAlgorithm = signatureAlgorithm
        self.signatureHash = signatureHash
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.dnsNames = dnsNames
        self.ipAddresses = ipAddresses
        self.extendedKeyUsage = extendedKeyUsage
        self.spkiSHA256 = spkiSHA256
        self.isSelfSigned = isSelfSigned
    }
}
