/// A name from the fixed vocabulary of ATS violations (docs/ats-rules.md, "Violations"). Names never change;
/// new ones may be added, so this is a struct with static members rather than a closed enum.
public struct ViolationKind: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let name: String
    /// Position in the vocabulary, so violations print in a stable order.
    let rank: Int

    private init(_ name: String, _ rank: Int) {
        self.name = name
        self.rank = rank
    }

    public static let cleartext = ViolationKind("cleartext", 0)
    public static let tlsVersion = ViolationKind("tls_version", 1)
    public static let cipherNotForwardSecret = ViolationKind("cipher_not_fs", 2)
    public static let cipherNotATS = ViolationKind("cipher_not_ats", 3)
    public static let keySize = ViolationKind("key_size", 4)
    public static let signatureHashLeaf = ViolationKind("sig_hash_leaf", 5)
    public static let signatureHashChain = ViolationKind("sig_hash_chain", 6)
    public static let untrustedChain = ViolationKind("untrusted_chain", 7)
    public static let nameMismatch = ViolationKind("name_mismatch", 8)
    public static let expired = ViolationKind("expired", 9)
    public static let notYetValid = ViolationKind("not_yet_valid", 10)
    public static let validityTooLong = ViolationKind("validity_too_long", 11)
    public static let noServerAuthEKU = ViolationKind("no_serverauth_eku", 12)
    public static let pinMismatch = ViolationKind("pin_mismatch", 13)
    public static let certificateTransparency = ViolationKind("ct", 14)
    public static let niapExtendedMasterSecret = ViolationKind("niap_ems_missing", 15)
    public static let niapCipher = ViolationKind("niap_cipher", 16)
    public static let niapSignatureAlgorithm = ViolationKind("niap_sigalg", 17)
    /// The ATS-shaped handshake failed though the server's facts break no rule above (a curve or
    /// signature scheme Apple's client does not offer): the app would see the failure all the same.
    public static let handshakeFailure = ViolationKind("handshake_failure", 18)
    /// The server chose HTTP/2 over TLS 1.2 with a suite RFC 9113 forbids under it (§9.2.2, the
    /// CBC suites ATS otherwise allows): an HTTP/2 client ends such a connection with
    /// INADEQUATE_SECURITY.
    public static let http2InadequateSecurity = ViolationKind("h2_inadequate_security", 19)

    public static let all: [ViolationKind] = [
        .cleartext, .tlsVersion, .cipherNotForwardSecret, .cipherNotATS, .keySize, .signatureHashLeaf,
        .signatureHashChain, .untrustedChain, .nameMismatch, .expired, .notYetValid, .validityTooLong,
        .noServerAuthEKU, .pinMismatch, .certificateTransparency, .niapExtendedMasterSecret, .niapCipher,
        .niapSignatureAlgorithm, .handshakeFailure, .http2InadequateSecurity,
    ]

    public init?(name: String) {
        guard let kind = ViolationKind.all.first(where: { $0.name == name }) else { return nil }
        self = kind
    }

    public var description: String { name }
    public static func < (lhs: ViolationKind, rhs: ViolationKind) -> Bool { lhs.rank < rhs.rank }
}

/// The error an iPhone app would have seen (docs/ats-rules.md, "Violations"): the outer `NSURLErrorDomain` code and,
/// where one applies, the inner SSL status (`_kCFStreamErrorCodeKey`).
public struct AppleError: Sendable, Hashable, CustomStringConvertible {
    public var nsurl: Int
    public var ssl: Int?

    public init(nsurl: Int, ssl: Int?) {
        self.nsurl = nsurl
        self.ssl = ssl
    }

    /// `-1200 (-9836)`: the `X-ATS-Error` header form.
    public var description: String { ssl.map { "\(nsurl) (\($0))" } ?? "\(nsurl)" }

    public var nsurlName: String {
        switch nsurl {
        case -1022: "NSURLErrorAppTransportSecurityRequiresSecureConnection"
        case -1200: "NSURLErrorSecureConnectionFailed"
        case -1201: "NSURLErrorServerCertificateHasBadDate"
        case -1202: "NSURLErrorServerCertificateUntrusted"
        case -1203: "NSURLErrorServerCertificateHasUnknownRoot"
        case -1204: "NSURLErrorServerCertificateNotYetValid"
        default: "NSURLError \(nsurl)"
        }
    }
}

/// One way a connection fails ATS, as a value.
public struct Violation: Sendable, Hashable {
    public var kind: ViolationKind
    public var error: AppleError
    /// One line, in words, with the facts: "the server negotiated TLS 1.0; ATS requires TLS 1.2 or later".
    public var explanation: String
    /// The Info.plist setting that would allow it (`NSExceptionMinimumTLSVersion = TLSv1.0` in the
    /// host's NSExceptionDomains entry), or nil when no ATS key can.
    public var allowedBy: String?

    public init(kind: ViolationKind, error: AppleError, explanation: String, allowedBy: String?) {
        self.kind = kind
        self.error = error
        self.explanation = explanation
        self.allowedBy = allowedBy
    }
}

/// The answer for one connection: compliant, or the violations in vocabulary order.
public struct Verdict: Sendable, Hashable {
    public var requirements: Requirements
    public var violations: [Violation]

    public init(requirements: Requirements, violations: [Violation]) {
        self.requirements = requirements
        self.violations = violations
    }

    public var isCompliant: Bool { violations.isEmpty }
    /// The error reported for the connection: that of the first violation in vocabulary order, which
    /// puts protocol failures (found during the handshake) before certificate ones (found after it).
    public var error: AppleError? { violations.first?.error }
}
