/// A Boolean key that Apple's parser tells apart as absent, present-true and present-false:
/// presence alone matters for the iOS 10+ cancelling of `NSAllowsArbitraryLoads`
/// (Apple: NSAllowsArbitraryLoads; Apple open source: SecProtocolConfiguration.m).
public enum KeyPresence: Sendable, Hashable {
    case absent
    case present(Bool)

    public var isTrue: Bool { self == .present(true) }
    public var isPresent: Bool { self != .absent }
}

/// The NIAP TLS package an app opts into (iOS 26.4+; Apple: NSRequiresNIAPTLSPackageVersion).
public enum NIAPPackage: String, Sendable, Hashable {
    case none
    case fcp21 = "FCP_v2.1"

    /// Parses the Info.plist value; `recommended` currently means `FCP_v2.1`.
    init?(plistValue: String) {
        switch plistValue {
        case "none": self = .none
        case "FCP_v2.1", "recommended": self = .fcp21
        default: return nil
        }
    }
}

/// One `NSExceptionDomains` entry after parsing, with Apple's defaults filled in.
public struct DomainException: Sendable, Hashable {
    /// The key exactly as written in the file.
    public var key: String
    public var includesSubdomains = false
    public var allowsInsecureHTTPLoads = false
    /// The floor as written (`nil`: not set, or set to a value Apple's parser rejects: TLS 1.2).
    public var minimumTLSVersion: TLSVersion?
    public var requiresForwardSecrecy = true
    /// `NSExceptionRequiresNIAPTLSPackageVersion`; nil inherits the global setting.
    public var niapPackage: NIAPPackage?
    /// One of Apple's built-in exceptions (Apple open source: SecProtocolConfiguration.m), not from the file.
    public var isBuiltIn = false
    /// The keys that set a value, for `explain`'s "why".
    public var keysInEffect: [String] = []

    public init(key: String) { self.key = key }

    /// The TLS floor in force: the entry's, or TLS 1.2 when unset or below 1.2 on a profile that
    /// ignores TLS 1.0/1.1 exceptions (iOS 26).
    public func effectiveFloor(on profile: OSProfile) -> TLSVersion {
        let floor = minimumTLSVersion ?? .tls12
        return floor < .tls12 && profile.ignoresLegacyTLSExceptions ? .tls12 : floor
    }
}

/// One `NSPinnedDomains` entry after parsing.
public struct PinnedDomain: Sendable, Hashable {
    public var key: String
    public var includesSubdomains = false
    /// nil: the entry has no `NSPinnedLeafIdentities`. Empty: present but nothing valid in it,
    /// which fails closed (Apple open source: SecPolicy.c, parseNSPinnedDomains).
    public var leafIdentities: Set<SPKIHash>?
    public var caIdentities: Set<SPKIHash>?

    public init(key: String) { self.key = key }
}

/// The SHA-256 of a DER SubjectPublicKeyInfo: what `SPKI-SHA256-BASE64` holds.
public struct SPKIHash: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        self.bytes = bytes
    }

    public init?(base64: String) {
        guard let decoded = Base64.decode(base64) else { return nil }
        self.init(bytes: decoded)
    }

    public var base64: String { Base64.encode(bytes) }
    public var description: String { base64 }
    public static func < (lhs: SPKIHash, rhs: SPKIHash) -> Bool { lhs.base64 < rhs.base64 }
}
