extension PolicyParser {
    /// `NSPinnedDomains`, read as Apple's `parseNSPinnedDomains` does (Apple open source: SecPolicy.c): a
    /// non-dictionary entry is skipped, `NSIncludesSubdomains` must be exactly true, and an identity array that is
    /// not an array or holds nothing valid pins the host with zero keys, so it fails closed.
    mutating func parsePinnedDomains(_ entry: PropertyListEntry, at path: PolicyKeyPath, into table: inout PinTable) {
        guard case .dictionary(let domains) = entry.value.value else {
            note(
                .error, "wrong_type", path,
                "NSPinnedDomains must be a dictionary of host names, but it is \(describe(entry.value.value)): "
                    + "nothing is pinned",
                fix: "make it a <dict> with one <key>host</key><dict>…</dict> per pinned domain",
                at: entry.value.location)
            return
        }
        reportDuplicates(domains, at: path)
        for domain in lastOfEach(domains) {
            let domainPath = path.appending(domain.key)
            guard case .dictionary(let keys) = domain.value.value else {
                note(
                    .error, "entry_not_dictionary", domainPath,
                    "the pin entry for \"\(domain.key)\" is \(describe(domain.value.value)), not a dictionary: skipped",
                    at: domain.value.location)
                continue
            }
            var pinned = PinnedDomain(key: domain.key)
            reportDuplicates(keys, at: domainPath)
            for key in lastOfEach(keys) {
                let keyPath = domainPath.appending(key.key)
                switch key.key {
                case ATSKey.includesSubdomains:
                    pinned.includesSubdomains = pinSubdomains(key, at: keyPath)
                case ATSKey.pinnedLeafIdentities:
                    pinned.leafIdentities = identities(key, at: keyPath)
                case ATSKey.pinnedCAIdentities:
                    pinned.caIdentities = identities(key, at: keyPath)
                default:
                    if let raw = XcodeDisplayName.rawKey(for: key.key), ATSKey.pinKeys.contains(raw) {
                        noteDisplayName(key, raw: raw, at: keyPath, effect: "so this setting is ignored")
                        continue
                    }
                    let suggestion = KeySuggestions.closest(to: key.key, among: ATSKey.pinKeys)
                    note(
                        .warning, "unknown_key", keyPath, "\(key.key) is not a key of a pinned domain: ignored",
                        fix: suggestion.map { "did you mean \($0)?" }, at: key.keyLocation)
                }
            }
            guard pinned.leafIdentities != nil || pinned.caIdentities != nil else {
                note(
                    .warning, "pin_without_identities", domainPath,
                    "the pin entry for \"\(domain.key)\" has neither NSPinnedCAIdentities nor NSPinnedLeafIdentities: "
                        + "the host is not pinned", fix: "add the SPKI hashes to pin", at: domain.keyLocation)
                continue
            }
            if domain.key.contains("*") || domain.key.contains("/") || domain.key.hasPrefix(".")
                || (domain.key.contains(":") && IPAddress(domain.key) == nil)
            {
                note(
                    .error, "never_matches", domainPath,
                    "\"\(domain.key)\" never matches: pinned domains are plain host names (no wildcard, port or URL)",
                    fix: "write \(KeyRepair.bareHost(domain.key))", at: domain.keyLocation)
            } else if domain.key.hasSuffix(".") {
                // The connection host loses its trailing dot before pins are matched (Apple open source: SecPolicy.c).
                note(
                    .error, "never_matches", domainPath,
                    "\"\(domain.key)\" never matches: a host's trailing dot is removed before pin matching",
                    fix: "write \(domain.key.dropLast())", at: domain.keyLocation)
            }
            if pinned.includesSubdomains {
                note(
                    .info, "pin_subdomain_depth", domainPath.appending(ATSKey.includesSubdomains),
                    "pins reach one label down only: a.\(domain.key) is pinned, a.b.\(domain.key) is not",
                    at: domain.keyLocation)
            }
            if table.hasEntry(matching: domain.key) {
                note(
                    .warning, "duplicate_pin", domainPath,
                    "another NSPinnedDomains key differs from \"\(domain.key)\" only in case: hosts compare without "
                        + "case, so the keys of both entries are allowed", fix: "merge the two entries",
                    at: domain.keyLocation)
            }
            table.add(pinned)
        }
    }

    private mutating func pinSubdomains(_ entry: PropertyListEntry, at path: PolicyKeyPath) -> Bool {
        if case .bool(let value) = entry.value.value { return value }
        note(
            .error, "wrong_type", path,
            "NSIncludesSubdomains must be exactly <true/> for pins, but it is \(describe(entry.value.value)): "
                + "subdomains are not pinned", fix: booleanFix(for: entry.value.value), at: entry.value.location)
        return false
    }

    /// The valid hashes of one identity array; an empty set when the key is there but nothing in it is
    /// usable, which fails closed.
    private mutating func identities(_ entry: PropertyListEntry, at path: PolicyKeyPath) -> Set<SPKIHash> {
        guard case .array(let items) = entry.value.value else {
            note(
                .error, "pin_fails_closed", path,
                "\(entry.key) must be an array, but it is \(describe(entry.value.value)): the host is pinned with "
                    + "no allowed key, so every connection to it fails", at: entry.value.location)
            return []
        }
        var hashes: Set<SPKIHash> = []
        for (index, item) in items.enumerated() {
            let itemPath = path.appending(index: index)
            guard let value = item.value.lookup(ATSKey.spkiSHA256) else {
                let what =
                    item.value.typeName == "dictionary"
                    ? "has no SPKI-SHA256-BASE64 key" : "is \(describe(item.value)), not a dictionary"
                note(.error, "malformed_pin", itemPath, "this identity \(what): it is skipped", at: item.location)
                continue
            }
            if case .dictionary(let keys) = item.value {
                for extra in keys where extra.key != ATSKey.spkiSHA256 {
                    note(
                        .warning, "unknown_key", itemPath.appending(extra.key),
                        "\(extra.key) is not read: an identity holds only SPKI-SHA256-BASE64",
                        fix: extra.key.hasPrefix("SPKI")
                            ? "use SPKI-SHA256-BASE64 (SHA-1 pins are not supported)" : "remove it",
                        at: extra.keyLocation)
                }
            }
            guard case .string(let text) = value.value.value else {
                note(
                    .error, "malformed_pin", itemPath.appending(ATSKey.spkiSHA256),
                    "SPKI-SHA256-BASE64 must be a string, but it is \(describe(value.value.value)): skipped",
                    at: value.value.location)
                continue
            }
            guard let decoded = Base64.decode(text) else {
                note(
                    .error, "malformed_pin", itemPath.appending(ATSKey.spkiSHA256),
                    "\"\(text)\" is not valid base64: skipped", at: value.value.location)
                continue
            }
            guard let hash = SPKIHash(bytes: decoded) else {
                note(
                    .error, "malformed_pin", itemPath.appending(ATSKey.spkiSHA256),
                    "\"\(text)\" decodes to \(decoded.count) bytes, but a SHA-256 has 32: it can never match",
                    fix:
                        "openssl x509 -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64",
                    at: value.value.location)
                continue
            }
            hashes.insert(hash)
        }
        if hashes.isEmpty {
            note(
                .error, "pin_fails_closed", path,
                "\(entry.key) holds no valid identity: the host is pinned with no allowed key, so every connection "
                    + "to it fails", at: entry.value.location)
        }
        return hashes
    }
}
