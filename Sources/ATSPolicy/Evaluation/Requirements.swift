/// Which rule of the policy decided a host's treatment.
public struct RuleSource: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable {
        /// An `NSExceptionDomains` entry matched; the global keys do not apply.
        case exception
        /// A local host (no dot, `.local`, a local address) exempt from ATS.
        case local
        /// A global key turned ATS off: `NSAllowsArbitraryLoads`, or the client-class key.
        case arbitraryLoads = "arbitrary_loads"
        /// Full ATS.
        case `default`
    }

    public var kind: Kind
    /// The `NSExceptionDomains` key, or the global key that decided; nil for the plain defaults.
    public var key: String?

    public init(kind: Kind, key: String?) {
        self.kind = kind
        self.key = key
    }
}

/// The URL scheme of a load: ATS blocks `http` where cleartext is not allowed.
public enum URLScheme: String, Sendable, CaseIterable, Hashable {
    case https
    case http
}

/// What an ATS client demands of one host, for one scheme and client class: the answer to
/// "which rule applies here, and what must the server do to pass?".
public struct Requirements: Sendable, Hashable {
    public var host: HostIdentity
    public var scheme: URLScheme
    public var clientClass: ClientClass
    public var rule: RuleSource
    /// The exception entry that matched, if any.
    public var exception: DomainException?
    /// Whether the host is local (no dot, `.local`, an address in `local_networks`), whichever rule won.
    public var hostIsLocal: Bool

    /// Whether `http://` loads to the host are allowed.
    public var cleartextAllowed: Bool
    /// Whether the ATS minimums (TLS floor, suites, key and hash strength, system trust) apply.
    public var atsMinimumsApply: Bool
    /// The TLS floor, or nil when the ATS minimums do not apply.
    public var minimumTLSVersion: TLSVersion?
    public var requiresForwardSecrecy: Bool
    public var suiteRestriction: SuiteRestriction
    /// The TLS 1.2 suites the client offers, in preference order.
    public var offeredTLS12Suites: [CipherSuite]
    /// The TLS 1.3 suites offered (all three, always).
    public var offeredTLS13Suites: [CipherSuite]
    /// Whether the app may loosen trust in its own code for this host (insecure-HTTP exception,
    /// or ATS off): only then can `assume_app_overrides_trust` waive certificate failures.
    public var appMayOverrideTrust: Bool
    /// The SPKI pins, or nil when the host is not pinned (or the client class ignores pins).
    public var pins: PinRequirement?
    /// The NIAP package in force (ios26 profile, where ATS applies), or nil.
    public var niapPackage: NIAPPackage?
    /// The OS profile the answer was computed for.
    public var osProfile: OSProfile
    /// The reasons, in words, in the order they were applied.
    public var explanation: [String]
}
