/// Apple's server-name rule (Apple open source: SecPolicyLeafCallbacks.c, `SecDNSMatch`; Apple: HT210176):
/// the host must be in the subjectAltName (the common name is ignored); DNS names compare
/// case-insensitively; a trailing dot is dropped from the host, never from the certificate's name; a
/// wildcard stands for exactly one whole leftmost label and never directly over a public suffix of the
/// ICANN section (`*.co.uk`); an IP host matches only an IP address entry.
enum CertificateNameMatcher {
    static func matches(_ host: HostIdentity, _ certificate: CertificateFacts) -> Bool {
        switch host {
        case .address(let address):
            return certificate.ipAddresses.contains(address)
        case .name(let name):
            let host = name.hasSuffix(".") ? String(name.dropLast()) : name
            return certificate.dnsNames.contains { pattern in
                !certificate.wildcardsOverPublicSuffix.contains(pattern)
                    && matches(host: host, pattern: HostIdentity.lowercase(pattern))
            }
        }
    }

    static func matches(host: String, pattern: String) -> Bool {
        guard pattern.hasPrefix("*.") else { return host == pattern }
        let suffix = pattern.dropFirst(2)
        // A wildcard needs at least two labels under it (no "*.com"), and covers one label only.
        guard suffix.contains("."), let dot = host.firstIndex(of: "."), dot != host.startIndex else { return false }
        return host[host.index(after: dot)...] == suffix
    }

    /// Why a name that looks as if it should match does not, in words: a certificate name written with
    /// a trailing dot, or a wildcard over a public suffix. nil when no name comes that close.
    static func nearMiss(_ host: HostIdentity, _ certificate: CertificateFacts) -> String? {
        guard case .name(let name) = host else { return nil }
        let host = name.hasSuffix(".") ? String(name.dropLast()) : name
        for pattern in certificate.dnsNames {
            let lowered = HostIdentity.lowercase(pattern)
            if certificate.wildcardsOverPublicSuffix.contains(pattern), matches(host: host, pattern: lowered) {
                return "\"\(pattern)\" is a wildcard directly over the public suffix \"\(lowered.dropFirst(2))\", "
                    + "which Apple never matches"
            }
            if lowered.hasSuffix("."), matches(host: host, pattern: String(lowered.dropLast())) {
                return "the certificate writes \"\(pattern)\" with a trailing dot, which Apple does not strip "
                    + "from a certificate's names"
            }
        }
        return nil
    }
}
