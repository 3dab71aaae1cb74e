/// Apple's server-name rule since iOS 13: the host must be in the subjectAltName (the common name is
/// ignored); DNS names compare case-insensitively, a wildcard stands for exactly one whole leftmost
/// label, and an IP host matches only an IP address entry.
enum CertificateNameMatcher {
    static func matches(_ host: HostIdentity, _ certificate: CertificateFacts) -> Bool {
        switch host {
        case .address(let address):
            return certificate.ipAddresses.contains(address)
        case .name(let name):
            let host = name.hasSuffix(".") ? String(name.dropLast()) : name
            return certificate.dnsNames.contains { matches(host: host, pattern: HostIdentity.lowercase($0)) }
        }
    }

    static func matches(host: String, pattern: String) -> Bool {
        let pattern = pattern.hasSuffix(".") ? String(pattern.dropLast()) : pattern
        guard pattern.hasPrefix("*.") else { return host == pattern }
        let suffix = pattern.dropFirst(2)
        // A wildcard needs at least two labels under it (no "*.com"), and covers one label only.
        guard suffix.contains("."), let dot = host.firstIndex(of: "."), dot != host.startIndex else { return false }
        return host[host.index(after: dot)...] == suffix
    }
}
