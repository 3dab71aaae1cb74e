/// "Did you mean …?" for unknown keys: a case-insensitive match or a small edit distance.
public enum KeySuggestions {
    static func closest(to key: String, among candidates: [String]) -> String? {
        let lowered = key.lowercased()
        if let sameLetters = candidates.first(where: { $0.lowercased() == lowered }) { return sameLetters }
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let distance = editDistance(lowered, candidate.lowercased())
            if distance <= max(2, candidate.count / 8), distance < (best?.distance ?? .max) {
                best = (candidate, distance)
            }
        }
        return best?.candidate
    }

    /// Levenshtein distance over Unicode scalars (also the daemon's config-key suggestions).
    public static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.unicodeScalars)
        let b = Array(b.unicodeScalars)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}

/// The names Xcode's property-list editor shows for ATS keys ("Allow Arbitrary Loads"). Some
/// generators and hand-written templates copy them into the file as keys, where ATS, which reads
/// only the raw names, ignores them.
enum XcodeDisplayName {
    /// The raw key a display name stands for, matched without regard to case or spaces, with the
    /// "Allow"/"Allows", "Include"/"Includes" and optional "Exception" variants people write.
    static func rawKey(for key: String) -> String? {
        guard key.contains(" ") else { return nil }  // a raw key or a host never has a space in it
        return table[normalized(key)]
    }

    private static func normalized(_ text: String) -> String {
        String(text.lowercased().filter { $0.isLetter })
    }

    private static let table: [String: String] = {
        let names: [(String, String)] = [
            ("App Transport Security Settings", ATSKey.appTransportSecurity),
            ("App Transport Security", ATSKey.appTransportSecurity),
            ("Allow Arbitrary Loads", ATSKey.allowsArbitraryLoads),
            ("Allow Arbitrary Loads for Media", ATSKey.allowsArbitraryLoadsForMedia),
            ("Allow Arbitrary Loads in Web Content", ATSKey.allowsArbitraryLoadsInWebContent),
            ("Allow Local Networking", ATSKey.allowsLocalNetworking),
            ("Exception Domains", ATSKey.exceptionDomains),
            ("Pinned Domains", ATSKey.pinnedDomains),
            ("Include Subdomains", ATSKey.includesSubdomains),
            ("Allow Insecure HTTP Loads", ATSKey.allowsInsecureHTTPLoads),
            ("Minimum TLS Version", ATSKey.minimumTLSVersion),
            ("Requires Forward Secrecy", ATSKey.requiresForwardSecrecy),
            ("Requires Certificate Transparency", ATSKey.requiresCertificateTransparency),
            ("Pinned CA Identities", ATSKey.pinnedCAIdentities),
            ("Pinned Leaf Identities", ATSKey.pinnedLeafIdentities),
        ]
        var table: [String: String] = [:]
        for (display, raw) in names {
            let base = normalized(display)
            var forms = [base]
            if base.hasPrefix("allow") { forms.append("allows" + base.dropFirst(5)) }
            if base.hasPrefix("include") { forms.append("includes" + base.dropFirst(7)) }
            if ATSKey.domainKeys.contains(raw) { forms += forms.map { "exception" + $0 } }
            for form in forms { table[form] = raw }
        }
        return table
    }()
}
