import ATSPolicy

/// The policy's findings that explain a surprising answer for one host: an ignored key inside the
/// entry that decided it, an entry that was meant for the host but never matches (a port, a
/// scheme, a wildcard in its key), and a misspelt or mistyped `NSIncludesSubdomains` in a parent
/// domain's entry, which is why that entry does not cover the host.
enum HostFindings {
    /// Sorted by key path, so that an XML file and its binary copy (no lines) read the same.
    static func relevant(to requirements: Requirements, among findings: [Finding]) -> [Finding] {
        bearing(on: requirements, among: findings).sorted { $0.path.description < $1.path.description }
    }

    private static func bearing(on requirements: Requirements, among findings: [Finding]) -> [Finding] {
        guard case .name(let host) = requirements.host else {
            return findings.filter { entryKey(of: $0).map { $0.key == requirements.rule.key } ?? false }
        }
        let pinned = Set(requirements.pins?.domains ?? [])
        return findings.filter { finding in
            guard finding.severity != .info, let (container, key, inside) = entryKey(of: finding) else { return false }
            let decided = container == ATSKey.exceptionDomains ? key == requirements.rule.key : pinned.contains(key)
            if decided { return inside }
            let meant = meantHost(key)
            if meant.name == host { return true }
            let parent = meant.name.map { host.hasSuffix("." + $0) } ?? false
            if parent, meant.wildcard { return true }
            // A parent's entry covers the host only through NSIncludesSubdomains.
            return parent && inside && names(includesSubdomains: finding.path.components.last ?? "")
        }
    }

    /// The container (`NSExceptionDomains` or `NSPinnedDomains`) and entry key a finding is about,
    /// and whether it is about something inside the entry rather than the entry's key itself.
    private static func entryKey(of finding: Finding) -> (container: String, key: String, inside: Bool)? {
        let components = finding.path.components
        guard let index = components.firstIndex(where: { $0 == ATSKey.exceptionDomains || $0 == ATSKey.pinnedDomains }),
            index + 1 < components.count
        else { return nil }
        return (components[index], components[index + 1], components.count > index + 2)
    }

    /// The host a domain key was probably written for: lowercased, without a scheme, a path, a
    /// port, a trailing dot or a leading `*.` (which makes it a wildcard for the subdomains).
    private static func meantHost(_ key: String) -> (name: String?, wildcard: Bool) {
        var text = Substring(key.lowercased())
        if let scheme = text.firstRange(of: "://") { text = text[scheme.upperBound...] }
        if let slash = text.firstIndex(of: "/") { text = text[..<slash] }
        if let colon = text.firstIndex(of: ":"), text.lastIndex(of: ":") == colon { text = text[..<colon] }
        while text.hasSuffix(".") { text = text.dropLast() }
        let wildcard = text.hasPrefix("*.")
        if wildcard { text = text.dropFirst(2) }
        return (text.isEmpty ? nil : String(text), wildcard)
    }

    /// Whether `key` is `NSIncludesSubdomains` or a misspelling of it.
    private static func names(includesSubdomains key: String) -> Bool {
        KeySuggestions.editDistance(key.lowercased(), ATSKey.includesSubdomains.lowercased()) <= 3
    }
}
