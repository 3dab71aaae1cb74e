/// `NSExceptionDomains`, indexed for lookups whose cost does not grow with the number of entries.
///
/// Names: a hash lookup per label of the host (spec §2.3: exact entry first, whatever its
/// `NSIncludesSubdomains`; then each parent, used only when it includes subdomains, nearest first).
/// Addresses: an exact lookup, then one lookup per distinct prefix length of the host's family,
/// longest first (spec §2.4).
public struct ExceptionTable: Sendable {
    /// Keyed by `Substring` so the parent climb looks up slices of the host without copying them.
    private var names: [Substring: DomainException] = [:]
    private var addresses: [IPAddress: DomainException] = [:]
    /// Per family: prefix lengths present, longest first, each with its masked networks.
    private var ipv4Ranges: [(length: Int, entries: [IPAddress: DomainException])] = []
    private var ipv6Ranges: [(length: Int, entries: [IPAddress: DomainException])] = []

    public init() {}

    /// All entries, for summaries: names in key order, then addresses, then ranges.
    public private(set) var entries: [DomainException] = []

    public var isEmpty: Bool { entries.isEmpty }
    public var count: Int { entries.count }

    /// Adds a name entry; a later entry with the same key replaces the earlier one.
    mutating func addName(_ exception: DomainException) {
        names[Substring(exception.key)] = exception
        record(exception)
    }

    mutating func addAddress(_ address: IPAddress, _ exception: DomainException) {
        addresses[address] = exception
        record(exception)
    }

    mutating func addRange(_ range: AddressRange, _ exception: DomainException) {
        func insert(into table: inout [(length: Int, entries: [IPAddress: DomainException])]) {
            if let index = table.firstIndex(where: { $0.length == range.prefixLength }) {
                table[index].entries[range.network] = exception
            } else {
                table.append((range.prefixLength, [range.network: exception]))
                table.sort { $0.length > $1.length }
            }
        }
        if range.network.isIPv4 { insert(into: &ipv4Ranges) } else { insert(into: &ipv6Ranges) }
        record(exception)
    }

    private mutating func record(_ exception: DomainException) {
        entries.removeAll { $0.key == exception.key }
        entries.append(exception)
    }

    /// Whether an entry with exactly this key exists (built-in exceptions give way to the app's own).
    func hasKey(_ key: String) -> Bool { entries.contains { $0.key == key } }

    /// The entry that governs `host`, or nil.
    public func lookup(_ host: HostIdentity, honouringAddressKeys: Bool = true) -> DomainException? {
        switch host {
        case .name(let name):
            return lookup(name: name)
        case .address(let address):
            guard honouringAddressKeys else { return nil }
            return lookup(address: address)
        }
    }

    func lookup(name: String) -> DomainException? {
        var rest = Substring(name)
        if let exact = names[rest] { return exact }
        // Climb parent by parent, to the empty string after a trailing dot, as Apple's code does.
        while let dot = rest.firstIndex(of: ".") {
            rest = rest[rest.index(after: dot)...]
            if let parent = names[rest], parent.includesSubdomains { return parent }
        }
        return nil
    }

    func lookup(address: IPAddress) -> DomainException? {
        if let exact = addresses[address] { return exact }
        let ranges = address.isIPv4 ? ipv4Ranges : ipv6Ranges
        for (length, entries) in ranges {
            if let match = entries[AddressRange.mask(address, to: length)] { return match }
        }
        return nil
    }
}

/// `NSPinnedDomains`, with Apple's matching (spec §1.4): case-insensitive, the host's trailing dot
/// stripped, an exact entry plus a parent one label up that includes subdomains, and the union of
/// every matching entry.
public struct PinTable: Sendable {
    private var byKey: [String: PinnedDomain] = [:]
    public private(set) var entries: [PinnedDomain] = []

    public init() {}

    public var isEmpty: Bool { entries.isEmpty }
    public var count: Int { entries.count }

    mutating func add(_ domain: PinnedDomain) {
        let key = HostIdentity.lowercase(domain.key)
        byKey[key] = domain
        entries.removeAll { HostIdentity.lowercase($0.key) == key }
        entries.append(domain)
    }

    /// The pins that apply to `host`, or nil when it is not pinned.
    public func lookup(_ host: HostIdentity) -> PinRequirement? {
        var name = host.description
        if name.hasSuffix(".") { name.removeLast() }
        var matches: [PinnedDomain] = []
        if let exact = byKey[name] { matches.append(exact) }
        // One label up only: pins do not reach `a.b.example.com` from `example.com` (spec §2.3).
        if let dot = name.firstIndex(of: ".") {
            let parent = String(name[name.index(after: dot)...])
            if let entry = byKey[parent], entry.includesSubdomains { matches.append(entry) }
        }
        guard !matches.isEmpty else { return nil }
        var requirement = PinRequirement(domains: matches.map(\.key))
        for match in matches {
            if let leaf = match.leafIdentities { requirement.leafIdentities = (requirement.leafIdentities ?? []).union(leaf) }
            if let ca = match.caIdentities { requirement.caIdentities = (requirement.caIdentities ?? []).union(ca) }
        }
        return requirement
    }
}

/// The SPKI pins one host must satisfy: every matching `NSPinnedDomains` entry contributes.
public struct PinRequirement: Sendable, Hashable {
    /// The `NSPinnedDomains` keys that matched, exact entry first.
    public var domains: [String]
    /// nil: no leaf pinning. Empty: pinned with no valid key, so every connection fails.
    public var leafIdentities: Set<SPKIHash>?
    public var caIdentities: Set<SPKIHash>?

    public init(domains: [String], leafIdentities: Set<SPKIHash>? = nil, caIdentities: Set<SPKIHash>? = nil) {
        self.domains = domains
        self.leafIdentities = leafIdentities
        self.caIdentities = caIdentities
    }
}
