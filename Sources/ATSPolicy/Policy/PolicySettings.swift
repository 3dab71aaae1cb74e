/// Which iOS behaviour to model where Apple changed the rules (docs/ats-rules.md, "The decisions").
public enum OSProfile: String, Sendable, CaseIterable, Hashable {
    /// iOS 9: only `NSAllowsArbitraryLoads` counts; no local-host exemption; no IP keys.
    case ios9
    /// iOS 10–16: the per-client-class keys cancel `NSAllowsArbitraryLoads`; local names and every
    /// IP literal are exempt from ATS by default; IP and CIDR keys are not yet honoured.
    case ios10
    /// iOS 17–25 (the default): IP literals need an exception unless they are local; IP and CIDR keys.
    case ios17
    /// iOS 26: as ios17, plus the NIAP keys; TLS 1.0 and 1.1 are refused for every load, whatever the
    /// policy (exceptions, arbitrary loads and the local-host exemption do not bring them back).
    case ios26
    /// Apple's own system services on iOS 26.x (Apple support article 126655, April 2026): MDM, declarative
    /// device management, automated device enrollment, app installation (enterprise apps included) and
    /// software updates need TLS 1.2 or later, ATS cipher suites and ATS-compliant certificates, and no
    /// Info.plist exception applies: every host is judged by the ATS defaults, whatever the policy. As
    /// ios26 otherwise (docs/ats-rules.md, "Apple's system services", says where the article is unclear).
    case appleSystem = "apple-system"

    /// The human name of the range of releases this profile stands for.
    public var releases: String {
        switch self {
        case .ios9: "iOS 9"
        case .ios10: "iOS 10-16"
        case .ios17: "iOS 17-25"
        case .ios26: "iOS 26"
        case .appleSystem: "Apple's system services (iOS 26)"
        }
    }

    var honoursClientClassKeys: Bool { self != .ios9 }
    var exemptsLocalHosts: Bool { self != .ios9 && self != .appleSystem }
    /// Whether the app's NSAppTransportSecurity is read at all: not for the OS's own connections.
    public var honoursInfoPlist: Bool { self != .appleSystem }
    /// Before iOS 17 every IP literal counted as local, and IP keys were not documented.
    var treatsEveryAddressAsLocal: Bool { self == .ios10 }
    var honoursAddressKeys: Bool { self == .ios17 || self == .ios26 }
    var ignoresLegacyTLSExceptions: Bool { self == .ios26 || self == .appleSystem }

    /// The lowest TLS version the OS speaks for any load, ATS or not. A published nscurl run on macOS 26
    /// fails even "Allow All Loads" against a TLS 1.0-only server with -1200/-9836, so on iOS 26 the
    /// floor holds with ATS off too (docs/ats-rules.md, "The decisions", `os_profile`). Earlier
    /// releases speak TLS 1.0 when ATS is off.
    public var lowestTLSVersion: TLSVersion { self == .ios26 || self == .appleSystem ? .tls12 : .tls10 }
    var honoursNIAP: Bool { self == .ios26 }
}

/// Which API opened the connection: the proxy cannot tell, so a listener says (Apple: Preventing Insecure
/// Network Connections, NSAllowsArbitraryLoadsInWebContent, NSAllowsArbitraryLoadsForMedia).
public enum ClientClass: String, Sendable, CaseIterable, Hashable {
    /// URLSession / NSURLConnection: the default.
    case urlsession
    /// WKWebView: `NSAllowsArbitraryLoadsInWebContent` applies and `NSPinnedDomains` does not.
    case webkit
    /// AVFoundation: `NSAllowsArbitraryLoadsForMedia` applies.
    case media
}

/// What to do with `NSTemporaryException*` and `NSThirdPartyException*` keys (docs/ats-rules.md, "The decisions").
public enum LegacyKeyHandling: String, Sendable, CaseIterable, Hashable {
    /// Apple's open-source parser reads none of them: they have no effect (the default).
    case ignore
    /// Treat them as aliases of the `NSException*` keys; the `NSException*` key wins when both are set.
    case honor
}

/// Certificate Transparency enforcement (Apple: Certificate Transparency policy, HT205280).
public enum CTEnforcement: String, Sendable, CaseIterable, Hashable {
    case apple
    case off
}

/// Every choice left to the user, with atsproxy's defaults (docs/ats-rules.md, "The decisions", "Settings").
public struct PolicySettings: Sendable, Hashable {
    public var osProfile: OSProfile
    public var cipherProfile: CipherProfile
    /// The client class used when a query does not name one.
    public var clientClass: ClientClass
    public var legacyKeys: LegacyKeyHandling
    /// Address ranges counted as local hosts, besides names without a dot and `.local` names.
    public var localNetworks: [AddressRange]
    /// Whether the app is assumed to override trust where ATS lets it (insecure-HTTP exceptions,
    /// arbitrary loads, local hosts). Default false: a bad certificate is still blocked
    /// (Apple: NSExceptionAllowsInsecureHTTPLoads; docs/ats-rules.md, "The decisions").
    public var assumeAppOverridesTrust: Bool
    /// Apple's built-in exceptions for apple.com and friends (Apple open source: SecProtocolConfiguration.m);
    /// off by default.
    public var builtinExceptions: Bool
    public var certificateTransparency: CTEnforcement

    public init(
        osProfile: OSProfile = .ios17,
        cipherProfile: CipherProfile = .current,
        clientClass: ClientClass = .urlsession,
        legacyKeys: LegacyKeyHandling = .ignore,
        localNetworks: [AddressRange] = AddressRange.defaultLocalNetworks,
        assumeAppOverridesTrust: Bool = false,
        builtinExceptions: Bool = false,
        certificateTransparency: CTEnforcement = .apple
    ) {
        self.osProfile = osProfile
        self.cipherProfile = cipherProfile
        self.clientClass = clientClass
        self.legacyKeys = legacyKeys
        self.localNetworks = localNetworks
        self.assumeAppOverridesTrust = assumeAppOverridesTrust
        self.builtinExceptions = builtinExceptions
        self.certificateTransparency = certificateTransparency
    }

    public static let `default` = PolicySettings()
}
