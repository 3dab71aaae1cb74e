/// An app's `NSAppTransportSecurity` dictionary, parsed the way Apple's parser reads it, with every
/// key that was ignored or suspicious recorded as a ``Finding``.
///
/// Load one with ``PolicyLoader``, or from a parsed plist with ``init(root:settings:)``; ask it
/// ``requirements(for:scheme:clientClass:)`` and ``verdict(for:observed:)``.
public struct TransportSecurityPolicy: Sendable {
    /// Whether the file was a whole app Info.plist or the ATS dictionary itself.
    public enum RootKind: String, Sendable {
        case infoPlist = "info_plist"
        case atsDictionary = "ats_dictionary"
    }

    public internal(set) var settings: PolicySettings
    public internal(set) var rootKind: RootKind
    /// Whether the Info.plist had an `NSAppTransportSecurity` dictionary at all.
    public internal(set) var hasATSDictionary: Bool

    public internal(set) var allowsArbitraryLoads: KeyPresence = .absent
    public internal(set) var allowsArbitraryLoadsForMedia: KeyPresence = .absent
    public internal(set) var allowsArbitraryLoadsInWebContent: KeyPresence = .absent
    public internal(set) var allowsLocalNetworking: KeyPresence = .absent
    /// `NSRequiresNIAPTLSPackageVersion` (honoured on the ios26 profile only).
    public internal(set) var niapPackage: NIAPPackage = .none

    public internal(set) var exceptions = ExceptionTable()
    public internal(set) var pins = PinTable()
    public internal(set) var findings: [Finding] = []

    /// The prefix of every key path in findings: `NSAppTransportSecurity` for an Info.plist.
    var basePath: PolicyKeyPath

    /// The ATS defaults: what an app with no `NSAppTransportSecurity` gets.
    public init(settings: PolicySettings = .default) {
        self.settings = settings
        self.rootKind = .atsDictionary
        self.hasATSDictionary = false
        self.basePath = PolicyKeyPath()
        if settings.builtinExceptions { addBuiltInExceptions() }
    }

    /// The keys whose presence cancels `NSAllowsArbitraryLoads` on iOS 10 and later, in the order
    /// `explain` names them.
    var arbitraryLoadsCancellers: [String] {
        guard settings.osProfile.honoursClientClassKeys else { return [] }
        var keys: [String] = []
        if allowsArbitraryLoadsForMedia.isPresent { keys.append(ATSKey.allowsArbitraryLoadsForMedia) }
        if allowsArbitraryLoadsInWebContent.isPresent { keys.append(ATSKey.allowsArbitraryLoadsInWebContent) }
        if allowsLocalNetworking.isPresent { keys.append(ATSKey.allowsLocalNetworking) }
        return keys
    }

    /// Whether any key cancels `NSAllowsArbitraryLoads` (iOS 10+): ``arbitraryLoadsCancellers`` without
    /// building the list, for the per-connection path.
    var isArbitraryLoadsCancelled: Bool {
        settings.osProfile.honoursClientClassKeys
            && (allowsArbitraryLoadsForMedia.isPresent || allowsArbitraryLoadsInWebContent.isPresent
                || allowsLocalNetworking.isPresent)
    }

    /// Apple's built-in exceptions (Apple open source: SecProtocolConfiguration.m). The app's own entries with the
    /// same key win, so these are added after parsing and only where the key is free.
    mutating func addBuiltInExceptions() {
        let builtIns: [(String, TLSVersion)] = [
            ("apple.com", .tls12), ("ls.apple.com", .tls10), ("gs.apple.com", .tls10), ("geo.apple.com", .tls10),
            ("is.autonavi.com", .tls10), ("apple-mapkit.com", .tls10), ("setup.icloud.com", .tls12),
        ]
        for (key, floor) in builtIns where !exceptions.hasKey(key) {
            var exception = DomainException(key: key)
            exception.includesSubdomains = true
            exception.allowsInsecureHTTPLoads = true
            exception.minimumTLSVersion = floor
            exception.requiresForwardSecrecy = false
            exception.isBuiltIn = true
            exception.keysInEffect = ["built-in exception (builtin_exceptions = on)"]
            exceptions.addName(exception)
        }
    }
}

/// The key names Apple reads, in one place.
public enum ATSKey {
    public static let appTransportSecurity = "NSAppTransportSecurity"
    public static let allowsArbitraryLoads = "NSAllowsArbitraryLoads"
    public static let allowsArbitraryLoadsForMedia = "NSAllowsArbitraryLoadsForMedia"
    public static let allowsArbitraryLoadsInWebContent = "NSAllowsArbitraryLoadsInWebContent"
    public static let allowsLocalNetworking = "NSAllowsLocalNetworking"
    public static let exceptionDomains = "NSExceptionDomains"
    public static let pinnedDomains = "NSPinnedDomains"
    public static let requiresNIAP = "NSRequiresNIAPTLSPackageVersion"

    public static let includesSubdomains = "NSIncludesSubdomains"
    public static let allowsInsecureHTTPLoads = "NSExceptionAllowsInsecureHTTPLoads"
    public static let minimumTLSVersion = "NSExceptionMinimumTLSVersion"
    public static let requiresForwardSecrecy = "NSExceptionRequiresForwardSecrecy"
    public static let requiresCertificateTransparency = "NSRequiresCertificateTransparency"
    public static let exceptionRequiresNIAP = "NSExceptionRequiresNIAPTLSPackageVersion"

    public static let pinnedCAIdentities = "NSPinnedCAIdentities"
    public static let pinnedLeafIdentities = "NSPinnedLeafIdentities"
    public static let spkiSHA256 = "SPKI-SHA256-BASE64"

    static let globalKeys = [
        allowsArbitraryLoads, allowsArbitraryLoadsForMedia, allowsArbitraryLoadsInWebContent, allowsLocalNetworking,
        exceptionDomains, pinnedDomains, requiresNIAP,
    ]
    static let domainKeys = [
        includesSubdomains, allowsInsecureHTTPLoads, minimumTLSVersion, requiresForwardSecrecy,
        requiresCertificateTransparency, exceptionRequiresNIAP,
    ]
    static let pinKeys = [includesSubdomains, pinnedCAIdentities, pinnedLeafIdentities]

    /// Legacy per-domain keys (docs/ats-rules.md, "The decisions") and the `NSException*` key each stands for. Later
    /// entries in this list lose to earlier ones when several spell the same setting.
    static let legacyDomainKeys: [(legacy: String, current: String)] = [
        ("NSThirdPartyExceptionAllowsInsecureHTTPLoads", allowsInsecureHTTPLoads),
        ("NSThirdPartyExceptionMinimumTLSVersion", minimumTLSVersion),
        ("NSThirdPartyExceptionRequiresForwardSecrecy", requiresForwardSecrecy),
        ("NSTemporaryExceptionAllowsInsecureHTTPLoads", allowsInsecureHTTPLoads),
        ("NSTemporaryExceptionMinimumTLSVersion", minimumTLSVersion),
        ("NSTemporaryExceptionRequiresForwardSecrecy", requiresForwardSecrecy),
        ("NSTemporaryThirdPartyExceptionAllowsInsecureHTTPLoads", allowsInsecureHTTPLoads),
        ("NSTemporaryThirdPartyExceptionMinimumTLSVersion", minimumTLSVersion),
        ("NSTemporaryThirdPartyExceptionRequiresForwardSecrecy", requiresForwardSecrecy),
    ]
}
