/// `NSExceptionDomains`, indexed for lookups whose cost does not grow with the number of entries.
///
/// Names: a hash lookup per label of the host (as Apple's `sec_protocol_configuration_find_exception_for_host`,
/// SecProtocolConfiguration.m: exact entry first, whatever its `NSIncludesSubdomains`; then each parent, used only
/// when it includes subdomains, nearest first). Addresses: an exact lookup, then one lookup per distinct prefix
/// length of the host's family, longest first (Apple open source: SecProtocolConfiguration.m,
/// `find_exception_for_address`).
public struct ExceptionTable: Sendable {
    /// Keyed by `Substring` so the parent climb looks up slices of the host without copying them.
    private var names: [Substring: DomainException] = [:]
    private var addresses: [IPAddress: DomainException] = [:]
    /// Per family: prefix lengths present, longest first, each with its masked networks.
    private var ipv4Ranges: [(length: Int, entries: [IPAddress: DomainException])] = []
    private var ipv6Ranges: [(length: Int, entries: [IPAddress: DomainException])] = []

    public init() {}

    /// All entries in the order they were added, for summaries.
    public private(set) var entries: [DomainException] = []
    private var entryIndex: [String: Int] = [:]

    public var isEmpty: Bool { entries.isEmpty }
    public var count: Int { entries.count }

    /// Adds a name entry; a later entry with the same key replaces the earlier one.
    mutating func addName(_ exception: DomainException) {
        names[Substring(exception.key)] = exception
        record(exception)
    }

    /// Adds an address entry. Two keys may spell one address (`2001:0db8::1`, `2001:db8::1`): Apple
    /// matches the text, so the canonically written key is the one a host written canonically
    /// meets, and it wins; otherwise the later key wins. Returns the entry that lost, if any.
    mutating func addAddress(_ address: IPAddress, _ exception: DomainException) -> DomainException? {
        if let existing = addresses[address], existing.key != exception.key {
            if existing.key == address.description { return exception }
            forget(existing.key)
            addresses[address] = exception
            record(exception)
            return existing
        }
        addresses[address] = exception
        record(exception)
        return nil
    }

    /// Adds a CIDR entry; returns the entry for the same range that it replaced, if any.
    mutating func addRange(_ range: AddressRange, _ exception: DomainException) -> DomainException? {
        var displaced: DomainException?
        func insert(into table: inout [(length: Int, entries: [IPAddress: DomainException])]) {
            if let index = table.firstIndex(where: { $0.length == range.prefixLength }) {
                displaced = table[index].entries.updateValue(exception, forKey: range.network)
            } else {
                table.append((range.prefixLength, [range.network: exception]))
                table.sort { $0.length > $1.length }
            }
        }
        if range.network.isIPv4 { insert(into: &ipv4Ranges) } else { insert(into: &ipv6Ranges) }
        if let displaced, displaced.key != exception.key { forget(displaced.key) }
        record(exception)
        return displaced?.key == exception.key ? nil : displaced
    }

    private mutating func record(_ exception: DomainException) {
        if let index = entryIndex[exception.key] {
            entries[index] = exception
        } else {
            entryIndex[exception.key] = entries.count
            entries.append(exception)
        }
    }

    /// Drops an entry another key displaced (rare: only on address collisions).
    private mutating func forget(_ key: String) {
        guard entryIndex[key] != nil else { return }
        entries.removeAll { $0.key == key }
        entryIndex = Dictionary(uniqueKeysWithValues: entries.enumerated().map { ($1.key, $0) })
    }

    /// Whether an entry with exactly this key exists (built-in exceptions give way to the app's own).
    func hasKey(_ key: String) -> Bool { entryIndex[key] != nil }

    /// The entry that governs `host`, or nil.
    /// (Address and CIDR keys are only in the table on profiles that honour them: the parser leaves
    /// them out elsewhere.)
    public func lookup(_ host: HostIdentity) -> DomainException? {
        switch host {
        case .name(let name): lookup(name: name)
        case .address(let address): lookup(address: address)
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

/// `NSPinnedDomains`, with Apple's matching (Apple open source: SecPolicy.c): case-insensitive, the host's trailing dot
/// stripped, an exact entry plus a parent one label up that includes subdomains, and the union of
/// every matching entry.
public struct PinTable: Sendable {
    /// By lowercased key; several entries may differ only in case, and all of them count.
    private var byKey: [String: [PinnedDomain]] = [:]
    public private(set) var entries: [PinnedDomain] = []

    public init() {}

    public var isEmpty: Bool { entries.isEmpty }
    public var count: Int { entries.count }

    mutating func add(_ domain: PinnedDomain) {
        byKey[HostIdentity.lowercase(domain.key), default: []].append(domain)
        entries.append(domain)
    }

    /// Whether an entry whose key differs only in case is already there.
    func hasEntry(matching key: String) -> Bool { byKey[HostIdentity.lowercase(key)] != nil }

    /// The pins that apply to `host`, or nil when it is not pinned.
    public func lookup(_ host: HostIdentity) -> PinRequirement? {
        var name = host.description
        if name.hasSuffix(".") { name.removeLast() }
        var matches: [PinnedDomain] = byKey[name] ?? []
        // One label up only: pins do not reach `a.b.example.com` from `example.com` (Apple open source: SecPolicy.c;
        // docs/ats-rules.md, "The decisions").
        if let dot = name.firstIndex(of: ".") {
            let parent = String(name[name.index(after: dot)...])
            matches += (byKey[parent] ?? []).filter(\.includesSubdomains)
        }
        guard !matches.isEmpty else { return nil }
        var requirement = PinRequirement(domains: matches.map(\.key))
        for match in matches {
            if let leaf = match.leafIdentities {
                requirement.leafIdentities = (requirement.leafIdentities ?? []).union(leaf)
            }
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
