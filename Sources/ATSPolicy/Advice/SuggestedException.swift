import TextFormats

/// The keys of one `NSExceptionDomains` entry that atsproxy proposes (`diagnose`'s conclusion,
/// `report`'s suggestion): only the relaxations a host needs, nothing written at its default.
public struct SuggestedException: Sendable, Hashable {
    /// `NSExceptionMinimumTLSVersion`, set only below the default TLS 1.2.
    public var minimumTLSVersion: TLSVersion?
    /// `NSExceptionRequiresForwardSecrecy = NO`.
    public var disablesForwardSecrecy: Bool
    /// `NSExceptionAllowsInsecureHTTPLoads = YES`.
    public var allowsInsecureHTTPLoads: Bool
    /// `NSIncludesSubdomains = YES`.
    public var includesSubdomains: Bool

    public init(
        minimumTLSVersion: TLSVersion? = nil, disablesForwardSecrecy: Bool = false,
        allowsInsecureHTTPLoads: Bool = false,
        includesSubdomains: Bool = false
    ) {
        // A floor at or above the default relaxes nothing: it is not written.
        self.minimumTLSVersion = minimumTLSVersion.flatMap { $0 < .tls12 ? $0 : nil }
        self.disablesForwardSecrecy = disablesForwardSecrecy
        self.allowsInsecureHTTPLoads = allowsInsecureHTTPLoads
        self.includesSubdomains = includesSubdomains
    }

    /// What an entry already in a policy relaxes, in the same terms.
    public init(_ exception: DomainException) {
        self.init(
            minimumTLSVersion: exception.minimumTLSVersion, disablesForwardSecrecy: !exception.requiresForwardSecrecy,
            allowsInsecureHTTPLoads: exception.allowsInsecureHTTPLoads, includesSubdomains: exception.includesSubdomains
        )
    }

    /// No relaxation at all: the host passes with the defaults.
    public var relaxesNothing: Bool { minimumTLSVersion == nil && !disablesForwardSecrecy && !allowsInsecureHTTPLoads }

    /// How much the entry loosens, to choose the smallest of several that work. Each relaxation weighs
    /// more than all lighter ones together, so the order agrees with "relaxes a subset of": cleartext
    /// weighs most, then each TLS version below 1.2, then forward secrecy.
    public var looseness: Int {
        var weight = disablesForwardSecrecy ? 1 : 0
        switch minimumTLSVersion {
        case .tls11?: weight += 2
        case let version? where version < .tls11: weight += 4
        default: break
        }
        return weight + (allowsInsecureHTTPLoads ? 8 : 0)
    }

    /// Whether this entry allows at least what `needed` asks for (subdomains aside).
    public func covers(_ needed: SuggestedException) -> Bool {
        let floorCovered: Bool =
            if let wanted = needed.minimumTLSVersion { minimumTLSVersion.map { $0 <= wanted } ?? false } else { true }
        return floorCovered
            && (!needed.disablesForwardSecrecy || disablesForwardSecrecy)
            && (!needed.allowsInsecureHTTPLoads || allowsInsecureHTTPLoads)
    }

    /// Everything either entry relaxes: the lower floor, and each flag either sets.
    public func union(_ other: SuggestedException) -> SuggestedException {
        let floor: TLSVersion? =
            switch (minimumTLSVersion, other.minimumTLSVersion) {
            case (let mine?, let theirs?): min(mine, theirs)
            case (let only?, nil), (nil, let only?): only
            case (nil, nil): nil
            }
        return SuggestedException(
            minimumTLSVersion: floor, disablesForwardSecrecy: disablesForwardSecrecy || other.disablesForwardSecrecy,
            allowsInsecureHTTPLoads: allowsInsecureHTTPLoads || other.allowsInsecureHTTPLoads,
            includesSubdomains: includesSubdomains || other.includesSubdomains)
    }

    /// The relaxations `self` has and `other` does not cover, one key each: what a policy lacks.
    public func keysBeyond(_ other: SuggestedException) -> [String] {
        var keys: [String] = []
        if let floor = minimumTLSVersion, !(other.minimumTLSVersion.map { $0 <= floor } ?? false) {
            keys.append(ATSKey.minimumTLSVersion)
        }
        if disablesForwardSecrecy, !other.disablesForwardSecrecy { keys.append(ATSKey.requiresForwardSecrecy) }
        if allowsInsecureHTTPLoads, !other.allowsInsecureHTTPLoads { keys.append(ATSKey.allowsInsecureHTTPLoads) }
        return keys
    }

    /// The entry's keys and values in the order Apple's documentation lists them.
    public var entries: [(key: String, value: PropertyListValue)] {
        var entries: [(key: String, value: PropertyListValue)] = []
        if includesSubdomains { entries.append((ATSKey.includesSubdomains, .bool(true))) }
        if allowsInsecureHTTPLoads { entries.append((ATSKey.allowsInsecureHTTPLoads, .bool(true))) }
        if let floor = minimumTLSVersion { entries.append((ATSKey.minimumTLSVersion, .string(floor.plistName))) }
        if disablesForwardSecrecy { entries.append((ATSKey.requiresForwardSecrecy, .bool(false))) }
        return entries
    }

    /// The entry as a plist dictionary.
    public var propertyList: PropertyListValue { .dictionary(ordered: entries.map { ($0.key, $0.value) }) }

    /// The entry as JSON, with the same keys and values as the plist.
    public var json: JSONValue { propertyList.json }

    /// `NSExceptionMinimumTLSVersion = TLSv1.0, NSExceptionRequiresForwardSecrecy = NO`: for one line of text.
    public var summary: String {
        guard !entries.isEmpty else { return "no exception needed" }
        return entries.map { entry in
            switch entry.value {
            case .bool(let flag): "\(entry.key) = \(flag ? "YES" : "NO")"
            case .string(let text): "\(entry.key) = \(text)"
            default: entry.key
            }
        }.joined(separator: ", ")
    }
}

extension SuggestedException {
    /// `NSAppTransportSecurity` holding only `NSExceptionDomains` with these entries, in this order.
    public static func atsDictionary(_ domains: [(domain: String, exception: SuggestedException)]) -> PropertyListValue
    {
        guard !domains.isEmpty else { return .dictionary([]) }
        return .dictionary(ordered: [
            (ATSKey.exceptionDomains, .dictionary(ordered: domains.map { ($0.domain, $0.exception.propertyList) }))
        ])
    }

    /// The Info.plist fragment to paste inside the top-level `<dict>`: `<key>NSAppTransportSecurity</key>` and its dictionary.
    public static func infoPlistFragment(_ domains: [(domain: String, exception: SuggestedException)]) -> String {
        PropertyListWriter.fragment(key: ATSKey.appTransportSecurity, value: atsDictionary(domains))
    }
}
