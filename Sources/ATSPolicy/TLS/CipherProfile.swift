/// The TLS 1.2 cipher suites an Apple client offers, by era (Apple: Information Property List Key Reference, 2018
/// archive; Apple open source: SecProtocolInternal.h, SecProtocolHelper.m).
public enum CipherProfile: String, Sendable, CaseIterable, Hashable {
    /// What current Apple clients offer (Security-60158.100, 2022, and later): the default.
    case current
    /// The 11 + 6 suites of Apple's 2016 documentation, which older guides quote.
    case documented

    /// TLS 1.3 suites: forward secret by design, offered whenever TLS 1.3 is.
    public static let tls13Suites = CipherSuite.list([0x1301, 0x1302, 0x1303])
    /// Every TLS 1.3 suite OpenSSL speaks, the two CCM ones included: what a survey offers to list
    /// the server's, though no Apple client offers CCM.
    public static let allTLS13Suites = tls13Suites + CipherSuite.list([0x1304, 0x1305])

    /// The ATS group: forward-secret suites offered when forward secrecy is required.
    public var forwardSecretSuites: [CipherSuite] {
        switch self {
        case .current: Self.currentForwardSecret
        case .documented: Self.documentedForwardSecret
        }
    }

    /// The compatibility group: RSA key-transport suites added by `NSExceptionRequiresForwardSecrecy = NO`.
    public var compatibilitySuites: [CipherSuite] {
        switch self {
        case .current: Self.currentCompatibility
        case .documented: Self.documentedCompatibility
        }
    }

    /// 3DES suites that Apple's default client list still carries after the two groups. They are
    /// offered only where the code does not restrict suites at all: ATS off, or forward secrecy off
    /// together with insecure HTTP allowed (Apple open source: SecProtocolConfiguration.m).
    public var legacySuites: [CipherSuite] { Self.legacy }

    /// The TLS 1.2 suites offered, in preference order, for a host's requirements.
    public func offeredSuites(restriction: SuiteRestriction) -> [CipherSuite] {
        switch (self, restriction) {
        case (.current, .forwardSecretOnly): Self.currentForwardSecret
        case (.current, .withCompatibility): Self.currentWithCompatibility
        case (.current, .unrestricted): Self.currentUnrestricted
        case (.documented, .forwardSecretOnly): Self.documentedForwardSecret
        case (.documented, .withCompatibility): Self.documentedWithCompatibility
        case (.documented, .unrestricted): Self.documentedUnrestricted
        }
    }

    // Built once: requirements are computed per connection, and these lists are shared by all.
    private static let currentForwardSecret = CipherSuite.list([
        0xC02C, 0xC02B, 0xCCA9, 0xC030, 0xC02F, 0xCCA8, 0xC00A, 0xC009, 0xC014, 0xC013,
    ])
    private static let documentedForwardSecret = CipherSuite.list([
        0xC02C, 0xC02B, 0xC024, 0xC00A, 0xC023, 0xC009, 0xC030, 0xC02F, 0xC028, 0xC027, 0xC013,
    ])
    private static let currentCompatibility = CipherSuite.list([0x009D, 0x009C, 0x0035, 0x002F])
    private static let documentedCompatibility = CipherSuite.list([0x009D, 0x009C, 0x003D, 0x0035, 0x003C, 0x002F])
    private static let legacy = CipherSuite.list([0xC008, 0xC012, 0x000A])
    private static let currentWithCompatibility = currentForwardSecret + currentCompatibility
    private static let currentUnrestricted = currentWithCompatibility + legacy
    private static let documentedWithCompatibility = documentedForwardSecret + documentedCompatibility
    private static let documentedUnrestricted = documentedWithCompatibility + legacy
}

/// How the ATS client narrows its TLS 1.2 suite list for one host.
public enum SuiteRestriction: String, Sendable, Hashable {
    /// ATS applies with forward secrecy required: the ATS group only.
    case forwardSecretOnly = "forward_secret"
    /// `NSExceptionRequiresForwardSecrecy = NO`: the compatibility group too.
    case withCompatibility = "compatibility"
    /// ATS off, or forward secrecy off with insecure HTTP allowed: Apple's default client list.
    case unrestricted
}
