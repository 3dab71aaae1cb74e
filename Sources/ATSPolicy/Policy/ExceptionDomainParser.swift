import TextFormats

extension PolicyParser {
    mutating func parseExceptionDomains(
        _ entry: PropertyListEntry, at path: PolicyKeyPath, into table: inout ExceptionTable
    ) {
        guard case .dictionary(let domains) = entry.value.value else {
            // Apple logs this and stops parsing exceptions; the global keys already read remain.
            note(
                .error, "wrong_type", path,
                "NSExceptionDomains must be a dictionary of host names, but it is \(describe(entry.value.value)): "
                    + "no exception applies",
                fix: "make it a <dict> with one <key>host</key><dict>…</dict> per exception domain",
                at: entry.value.location)
            return
        }
        reportDuplicates(domains, at: path)
        let kept = lastOfEach(domains)
        for (index, domain) in kept.enumerated() {
            let domainPath = path.appending(domain.key)
            if let meant = Self.atsKeyMeant(by: domain.key) {
                noteKeyAmongDomains(
                    domain, meant: meant, neighbour: Self.neighbourDomain(of: index, in: kept), at: domainPath)
                continue
            }
            guard case .dictionary(let keys) = domain.value.value else {
                note(
                    .error, "entry_not_dictionary", domainPath,
                    "the entry for \"\(domain.key)\" is \(describe(domain.value.value)), not a dictionary: ATS skips "
                        + "it, so the host is treated as if it were not listed",
                    fix: "make it a <dict> (an empty <dict/> gives the host the full ATS defaults)",
                    at: domain.value.location)
                continue
            }
            var exception = parseExceptionKeys(keys, for: domain, at: domainPath)
            exception.key = domain.key
            listedDomains[domain.key] = (domain.keyLocation, lastOfEach(keys).map(\.key))
            add(exception, keyLocation: domain.keyLocation, at: domainPath, to: &table)
        }
    }

    /// Files the entry under a name, an address or a range, and notes keys that can never match.
    private mutating func add(
        _ exception: DomainException, keyLocation: SourceLocation, at path: PolicyKeyPath,
        to table: inout ExceptionTable
    ) {
        let key = exception.key
        if key.contains("/"), !key.contains("://") {
            do {
                let range = try AddressRange(parsing: key)
                guard honoursAddressKeys(key, at: path, keyLocation) else { return }
                noteSubdomainsOnAddress(exception, at: path, keyLocation)
                if let written = IPAddress(key.split(separator: "/").first ?? ""), written != range.network {
                    note(
                        .warning, "cidr_host_bits", path,
                        "\"\(key)\" has bits set after its /\(range.prefixLength) prefix: it is the range \(range)",
                        fix: "write \(range)", at: keyLocation)
                }
                if let displaced = table.addRange(range, exception) {
                    noteCollision(displaced.key, key, same: "range \(range)", kept: key, at: path, keyLocation)
                }
            } catch {
                note(
                    .error, "invalid_cidr", path, "\"\(key)\" is not a valid CIDR range (\(error)): it never matches",
                    at: keyLocation)
            }
            return
        }
        if let address = IPAddress(key) ?? (key.contains(":") ? IPAddress(key.split(separator: "%").first ?? "") : nil)
        {
            guard !key.contains("%") else {
                note(
                    .error, "never_matches", path,
                    "\"\(key)\" has a zone id: exception keys cannot name an interface, so it never matches",
                    fix: "write \(address) without the zone", at: keyLocation)
                return
            }
            guard honoursAddressKeys(key, at: path, keyLocation) else { return }
            noteSubdomainsOnAddress(exception, at: path, keyLocation)
            if let local = localReason(address.description) {
                noteLocalHostListed(exception, because: local, at: path, keyLocation)
            }
            if address.description != key {
                note(
                    .warning, "non_canonical_address", path,
                    "\"\(key)\" is not written in canonical form; atsproxy matches it as \(address), but an iPhone "
                        + "compares the text, so it matches there only when the app writes the address the same way",
                    fix: "write \(address)", at: keyLocation)
            }
            if let loser = table.addAddress(address, exception) {
                let kept = loser.key == key ? address.description : key
                noteCollision(loser.key, key, same: "address \(address)", kept: kept, at: path, keyLocation)
            }
            return
        }
        checkNameKey(exception, at: path, keyLocation)
        table.addName(exception)
    }

    /// Two keys that normalise to one address or range: only one can be used.
    private mutating func noteCollision(
        _ first: String, _ second: String, same what: String, kept: String, at path: PolicyKeyPath,
        _ location: SourceLocation
    ) {
        let other = first == kept ? second : first
        note(
            .warning, "duplicate_address", path,
            "\"\(first)\" and \"\(second)\" name the same \(what): \"\(kept)\" is used and \"\(other)\" is ignored",
            fix: "keep one entry for \(what.split(separator: " ").last ?? "")", at: location)
    }

    private mutating func honoursAddressKeys(_ key: String, at path: PolicyKeyPath, _ location: SourceLocation) -> Bool
    {
        guard !settings.osProfile.honoursAddressKeys else { return true }
        note(
            .info, "not_on_profile", path,
            "IP address and CIDR exception keys are honoured from iOS 17: the \(settings.osProfile.rawValue) "
                + "profile ignores \"\(key)\"", at: location)
        return false
    }

    private mutating func noteSubdomainsOnAddress(
        _ exception: DomainException, at path: PolicyKeyPath, _ location: SourceLocation
    ) {
        guard exception.includesSubdomains else { return }
        note(
            .warning, "no_effect", path.appending(ATSKey.includesSubdomains),
            "NSIncludesSubdomains has no effect on an IP address or CIDR entry", at: location)
    }

    /// The key rules of Apple's NSExceptionDomains reference: lowercase, no port, no wildcard, trailing dot only on
    /// purpose.
    private mutating func checkNameKey(_ exception: DomainException, at path: PolicyKeyPath, _ location: SourceLocation)
    {
        let key = exception.key
        func never(_ why: String, fix: String?) {
            note(
                .error, "never_matches", path, "\(PolicyKeyPath.quoted(key)) never matches: \(why)", fix: fix,
                at: location)
        }
        let bare = KeyRepair.bareHost(key)
        if key.isEmpty {
            never("the key is empty", fix: "write the host name")
        } else if key.contains("://") || key.contains("/") {
            never("a key is a host name, not a URL", fix: "write \(bare)")
        } else if key.contains("*") {
            never(
                "wildcards are not supported; \"\(key)\" is compared as literal text",
                fix: "write \(bare) with NSIncludesSubdomains = YES")
        } else if key.hasPrefix("[") || key.hasSuffix("]") {
            never("IPv6 keys are written without brackets", fix: "write \(bare)")
        } else if key.contains(":") {
            never("a key cannot name a port", fix: "write \(bare)")
        } else if key.hasPrefix(".") {
            never("it starts with a dot", fix: "write \(bare) with NSIncludesSubdomains = YES")
        } else if let bad = key.unicodeScalars.first(where: { $0.value < 0x21 || $0.value == 0x7F }) {
            never(
                "it contains the control or space character U+\(String(bad.value, radix: 16, uppercase: true))",
                fix: "write \(bare.filter { !$0.isWhitespace })")
        } else if !key.unicodeScalars.allSatisfy(\.isASCII) {
            never(
                "hosts are looked up in their ASCII (punycode) form, so a key with non-ASCII letters is never found",
                fix: "write the punycode form (xn--…) of \(key)")
        } else if key != HostIdentity.lowercase(key) {
            never(
                "hosts are looked up in lowercase, so a key with capital letters is never found",
                fix: "write \(HostIdentity.lowercase(key))")
        } else if key.hasSuffix(".") {
            note(
                .warning, "trailing_dot", path,
                "\"\(key)\" ends with a dot, so it matches only hosts written with a trailing dot, not \(key.dropLast())",
                fix: "write \(key.dropLast()) unless that is what you mean", at: location)
        } else if let local = localReason(key), key == "localhost" || !exception.includesSubdomains || key.contains(".")
        {
            // Not a top-level domain worth a warning: the surprise is losing the local-host exemption.
            noteLocalHostListed(exception, because: local, at: path, location)
        } else if !key.contains("."), exception.includesSubdomains {
            note(
                .warning, "whole_tld", path,
                "\"\(key)\" with NSIncludesSubdomains applies to every host under .\(key)",
                fix: "name the domains you need instead", at: location)
        }
    }

    /// Listing a host ATS exempts as local takes it out of the exemption: an exception beats the local
    /// default (Apple open source, SecProtocolConfiguration.m; docs/ats-rules.md, "Which rule decides, for
    /// one connection"). Said unless the entry allows insecure loads, which keeps http:// working.
    private mutating func noteLocalHostListed(
        _ exception: DomainException, because local: String, at path: PolicyKeyPath, _ location: SourceLocation
    ) {
        guard !exception.allowsInsecureHTTPLoads else { return }
        let key = exception.key
        note(
            .warning, "local_host_listed", path,
            "listing \"\(key)\" takes it out of the local-host exemption: unlisted, an iPhone exempts it from "
                + "ATS (\(local)); listed, it gets this entry, which does not allow insecure loads, so "
                + "http://\(key.contains(":") ? "[\(key)]" : key) is blocked and HTTPS to it needs full ATS"
                + (exception.includesSubdomains
                    ? "; NSIncludesSubdomains only extends the same to names under \(key)" : ""),
            fix: "add NSExceptionAllowsInsecureHTTPLoads = YES to the entry, or remove the entry (\(key) is "
                + "exempt without it)", at: location)
    }

    /// Why ATS would exempt the host `key` names as local, when it would (docs/ats-rules.md, "Local
    /// hosts"): an unqualified name, a `.local` name, or an address in the local networks. A range is
    /// no one host, so nil for it.
    private func localReason(_ key: String) -> String? {
        guard settings.osProfile.exemptsLocalHosts, !key.contains("/"), let host = try? HostIdentity(parsing: key)
        else { return nil }
        switch host {
        case .name:
            guard host.isLocalName else { return nil }
            return key.hasSuffix(".local") ? "a .local name" : "an unqualified name"
        case .address(let address):
            if settings.osProfile.treatsEveryAddressAsLocal {
                return "an IP address, which \(settings.osProfile.releases) exempts"
            }
            guard settings.localNetworks.contains(where: { $0.contains(address) }) else { return nil }
            return "an address of a local network"
        }
    }

    // MARK: - The keys inside one entry

    private mutating func parseExceptionKeys(
        _ keys: [PropertyListEntry], for domain: PropertyListEntry, at path: PolicyKeyPath
    ) -> DomainException {
        var exception = DomainException(key: domain.key)
        reportDuplicates(keys, at: path)
        let keys = lastOfEach(keys)
        if keys.isEmpty {
            note(
                .info, "empty_exception", path,
                "the entry for \"\(domain.key)\" is empty: the host gets the full ATS defaults and no global key "
                    + "(such as NSAllowsArbitraryLoads) applies to it", at: domain.value.location)
        }
        let legacy = keys.filter { entry in ATSKey.legacyDomainKeys.contains { $0.legacy == entry.key } }
        let modern = Set(keys.map(\.key).filter { ATSKey.domainKeys.contains($0) })
        // Honoured aliases apply only where the NSException* key is absent; among aliases of one
        // setting, the order of `legacyDomainKeys` decides, not the file's (dictionaries have none).
        var read: Set<String> = []
        if settings.legacyKeys == .honor {
            var settled = modern
            for (legacyName, current) in ATSKey.legacyDomainKeys where !settled.contains(current) {
                guard let entry = legacy.first(where: { $0.key == legacyName }) else { continue }
                apply(entry, as: current, at: path.appending(entry.key), to: &exception)
                settled.insert(current)
                read.insert(legacyName)
            }
        }
        func modernName(_ legacyName: String) -> String? {
            ATSKey.legacyDomainKeys.first { $0.legacy == legacyName }?.current
        }
        for entry in legacy {
            guard let current = modernName(entry.key) else { continue }
            let readInstead = read.first { $0 != entry.key && modernName($0) == current }
            noteLegacyKey(
                entry, current: current, read: read.contains(entry.key), modern: keys.first { $0.key == current },
                readInstead: readInstead, at: path.appending(entry.key))
        }
        for entry in keys {
            let entryPath = path.appending(entry.key)
            if ATSKey.domainKeys.contains(entry.key) {
                apply(entry, as: entry.key, at: entryPath, to: &exception)
            } else if legacy.contains(where: { $0.key == entry.key }) {
                continue
            } else if ATSKey.globalKeys.contains(entry.key) {
                note(
                    .error, "misplaced_key", entryPath,
                    "\(entry.key) is a global key: inside an exception domain it has no effect",
                    fix: "move it to the top level of NSAppTransportSecurity", at: entry.keyLocation)
            } else if entry.key == ATSKey.pinnedCAIdentities || entry.key == ATSKey.pinnedLeafIdentities {
                note(
                    .error, "misplaced_key", entryPath,
                    "\(entry.key) belongs in NSPinnedDomains: inside an exception domain it pins nothing",
                    fix: "move it to NSPinnedDomains[\"\(domain.key)\"]", at: entry.keyLocation)
            } else if let raw = XcodeDisplayName.rawKey(for: entry.key) {
                let pin = raw == ATSKey.pinnedCAIdentities || raw == ATSKey.pinnedLeafIdentities
                noteDisplayName(
                    entry, raw: raw, at: entryPath, effect: "so this setting is ignored",
                    move: ATSKey.domainKeys.contains(raw)
                        ? nil
                        : pin
                            ? "move it to NSPinnedDomains[\(PolicyKeyPath.quoted(domain.key))]"
                            : "move it to the top level of NSAppTransportSecurity")
            } else if Self.isHTTPSBetaKey(entry.key) {
                note(
                    .warning, "obsolete_key", entryPath,
                    "\(entry.key) is an obsolete iOS 9 beta key (about HTTPS, not http://) that ATS does not read: it has "
                        + "no effect; it is not a misspelling of NSExceptionAllowsInsecureHTTPLoads, which allows http://",
                    fix: "remove it", at: entry.keyLocation)
            } else {
                let suggestion = KeySuggestions.closest(
                    to: entry.key, among: ATSKey.domainKeys + ATSKey.legacyDomainKeys.map(\.legacy))
                let current = suggestion.flatMap { name in ATSKey.legacyDomainKeys.first { $0.legacy == name }?.current
                }
                note(
                    .warning, "unknown_key", entryPath,
                    "\(entry.key) is not a key of an exception domain: ATS ignores it",
                    fix: (current ?? suggestion).map { "did you mean \($0)?" }, at: entry.keyLocation)
            }
        }
        return exception
    }

    /// `NS[Temporary][ThirdParty]ExceptionAllowsInsecureHTTPSLoads`: names from the iOS 9 betas, one
    /// letter from a real key, so the edit-distance suggestion would wrongly call them typos.
    static func isHTTPSBetaKey(_ key: String) -> Bool {
        guard key.hasPrefix("NS"), key.hasSuffix("ExceptionAllowsInsecureHTTPSLoads") else { return false }
        let middle = key.dropFirst(2).dropLast("ExceptionAllowsInsecureHTTPSLoads".count)
        return ["", "Temporary", "ThirdParty", "TemporaryThirdParty"].contains(String(middle))
    }

    /// A legacy key (docs/ats-rules.md, "The decisions"). The fix must leave a valid, uncontradicted policy: when the
    /// NSException* key is also set it wins (in Apple's parser, which reads no legacy key, and under
    /// legacy_keys = honor alike), so the legacy key should simply go; and renaming must not carry an
    /// invalid TLS version string such as electron-builder's "1.0" over to the real key.
    ///
    /// When both keys are set with different values (an SDK's install notes pasted next to the app's
    /// own entry), that is a contradiction in the file whatever ATS reads: name it, and the value an
    /// iPhone uses, the NSException* key's (docs/ats-rules.md, "The decisions": it wins under honor too).
    private mutating func noteLegacyKey(
        _ entry: PropertyListEntry, current: String, read: Bool, modern: PropertyListEntry?, readInstead: String?,
        at path: PolicyKeyPath
    ) {
        let honor = settings.legacyKeys == .honor
        let modernPresent = modern != nil
        var message: String
        var fix = "rename it to \(current)"
        if let modern, !Self.sameSetting(modern.value.value, entry.value.value) {
            let used = Self.plistText(modern.value.value)
            note(
                .warning, "contradictory_keys", path,
                "\(current) = \(used) and \(entry.key) = \(Self.plistText(entry.value.value)) contradict each other in "
                    + "this dictionary: an iPhone uses \(used), from \(current) ("
                    + (honor ? "it wins even with legacy_keys = honor" : "ATS no longer reads the legacy key") + ")",
                fix:
                    "remove \(entry.key); if \(Self.plistText(entry.value.value)) is what the host needs, write it in \(current)",
                at: entry.keyLocation)
            return
        }
        if modernPresent {
            message =
                "\(entry.key) is a legacy key, and \(current) is also set in this dictionary: \(current) wins"
                + (honor ? " even with legacy_keys = honor" : " (ATS no longer reads the legacy key)")
                + ", so \(entry.key) has no effect"
            fix = "remove \(entry.key) (\(current) is already set here)"
        } else if let readInstead {
            message =
                "\(entry.key) is a legacy key; with legacy_keys = honor \(readInstead) is read for \(current) "
                + "instead, so \(entry.key) has no effect"
            fix = "remove both and write \(current)"
        } else if read {
            message = "\(entry.key) is a legacy key, read as \(current) because legacy_keys = honor"
        } else {
            message = "\(entry.key) is a legacy key that ATS no longer reads: it has no effect"
        }
        if current == ATSKey.minimumTLSVersion, !modernPresent, !Self.isTLSVersionString(entry.value.value) {
            let repaired = KeyRepair.tlsVersionFix(for: entry.value.value)
            message +=
                "; its value, \(describe(entry.value.value)), is not a TLS version ATS accepts either: renamed "
                + "with that value, the floor would stay at TLSv1.2"
            fix += readInstead == nil ? " and " + repaired : ", then " + repaired
        }
        note(read && !modernPresent ? .info : .warning, "legacy_key", path, message, fix: fix, at: entry.keyLocation)
    }

    /// Whether two values set a key the same way as ATS reads them (`<true/>` and `<integer>1</integer>`
    /// alike; any other number is NO).
    static func sameSetting(_ a: PropertyListValue, _ b: PropertyListValue) -> Bool {
        func asBool(_ value: PropertyListValue) -> Bool? {
            switch value {
            case .bool(let flag): flag
            case .integer(let number): number == 1
            case .unsignedInteger(let number): number == 1
            case .real(let number): number == 1
            default: nil
            }
        }
        if let x = asBool(a), let y = asBool(b) { return x == y }
        return a == b
    }

    /// A value as Xcode's plist editor shows it: YES/NO, a string's text, else its type.
    static func plistText(_ value: PropertyListValue) -> String {
        switch value {
        case .bool(let flag): flag ? "YES" : "NO"
        case .string(let text): "\"\(text)\""
        case .integer(let number): "\(number)"
        default: value.typeNameWithArticle
        }
    }

    static func isTLSVersionString(_ value: PropertyListValue) -> Bool {
        guard case .string(let text) = value else { return false }
        return ["TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3", "DTLSv1.0", "DTLSv1.2"].contains(text)
    }

    /// Applies one key's value to the entry; `name` is the `NSException*` key it stands for.
    private mutating func apply(
        _ entry: PropertyListEntry, as name: String, at path: PolicyKeyPath, to exception: inout DomainException
    ) {
        switch name {
        case ATSKey.includesSubdomains:
            exception.includesSubdomains = domainBool(entry, default: false, at: path)
        case ATSKey.allowsInsecureHTTPLoads:
            exception.allowsInsecureHTTPLoads = domainBool(entry, default: false, at: path)
        case ATSKey.requiresForwardSecrecy:
            exception.requiresForwardSecrecy = domainBool(entry, default: true, at: path)
        case ATSKey.minimumTLSVersion:
            exception.minimumTLSVersion = minimumTLSVersion(entry, at: path)
        case ATSKey.requiresCertificateTransparency:
            _ = domainBool(entry, default: false, at: path)
            note(
                .warning, "obsolete_key", path,
                "NSRequiresCertificateTransparency is obsolete: the system enforces Certificate Transparency "
                    + "for publicly trusted certificates anyway, and the key has no effect of its own",
                fix: "remove it", at: entry.keyLocation)
            return
        case ATSKey.exceptionRequiresNIAP:
            exception.niapPackage = niapPackage(entry, at: path)
        default:
            return
        }
        exception.keysInEffect.append(entry.key)
    }

    /// A per-domain Boolean: a wrong type gets the key's default (Apple open source: SecProtocolConfiguration.m).
    private mutating func domainBool(_ entry: PropertyListEntry, default fallback: Bool, at path: PolicyKeyPath) -> Bool
    {
        switch globalBool(entry, at: path, fallback: fallback) {
        case .present(let value): return value
        case .absent: return fallback
        }
    }

    /// Exact, case-sensitive strings only; anything else leaves the floor at TLS 1.2
    /// (Apple open source: SecProtocolConfiguration.m).
    private mutating func minimumTLSVersion(_ entry: PropertyListEntry, at path: PolicyKeyPath) -> TLSVersion? {
        guard case .string(let text) = entry.value.value else {
            note(
                .error, "wrong_type", path,
                "NSExceptionMinimumTLSVersion must be a string such as \"TLSv1.2\", but it is "
                    + "\(describe(entry.value.value)): the floor stays at TLSv1.2",
                fix: KeyRepair.tlsVersionFix(for: entry.value.value), at: entry.value.location)
            return nil
        }
        let version: TLSVersion
        switch text {
        case "TLSv1.0": version = .tls10
        case "TLSv1.1": version = .tls11
        case "TLSv1.2": version = .tls12
        case "TLSv1.3": version = .tls13
        case "DTLSv1.0", "DTLSv1.2":
            // Apple's parser accepts the DTLS names. DTLS 1.0 is TLS 1.1 on datagrams, DTLS 1.2 is TLS 1.2.
            version = text == "DTLSv1.0" ? .tls11 : .tls12
            note(
                .warning, "dtls_version", path,
                "\"\(text)\" is a DTLS version; ATS accepts it, and atsproxy reads it as \(version.plistName)",
                fix: "write \(version.plistName)", at: entry.value.location)
        default:
            note(
                .error, "invalid_tls_version", path,
                "\"\(text)\" is not a version ATS accepts (TLSv1.0, TLSv1.1, TLSv1.2, TLSv1.3; exact spelling): "
                    + "the floor stays at TLSv1.2",
                fix: KeyRepair.tlsVersionFix(for: entry.value.value), at: entry.value.location)
            return nil
        }
        if version < .tls12, settings.osProfile.ignoresLegacyTLSExceptions {
            note(
                .warning, "ignored_on_profile", path,
                "has no effect on the ios26 profile: iOS 26 refuses TLS 1.0 and 1.1 for every load, whatever the "
                    + "policy, so the floor stays at TLSv1.2 (NSAllowsArbitraryLoads does not bring them back either)",
                at: entry.value.location)
        }
        return version
    }
}

/// Suggested repairs for keys and values users commonly get wrong.
enum KeyRepair {
    /// The host inside a URL, a wildcard, a port or brackets: what the key should have been.
    static func bareHost(_ key: String) -> String {
        var host = Substring(key)
        if let scheme = host.firstRange(of: "://") { host = host[scheme.upperBound...] }
        if let slash = host.firstIndex(of: "/") { host = host[..<slash] }
        while host.hasPrefix("*.") || host.hasPrefix(".") || host.hasPrefix("*") {
            host = host.dropFirst(host.hasPrefix("*.") ? 2 : 1)
        }
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
            host = host[host.index(after: host.startIndex)..<close]
        } else if let colon = host.lastIndex(of: ":"), host.firstIndex(of: ":") == colon {
            host = host[..<colon]
        }
        return HostIdentity.lowercase(host.trimmingSpaces)
    }

    /// `1.0`, `TLSV1.3`, `tls1.2`, a number 1.2 …: the spelling ATS wants.
    static func tlsVersionFix(for value: PropertyListValue) -> String {
        var digits = ""
        switch value {
        case .string(let text): digits = String(text.filter { $0.isNumber || $0 == "." })
        case .real(let number): digits = String(number)
        case .integer(let number): digits = "\(number).0"
        default: break
        }
        while digits.hasPrefix(".") { digits.removeFirst() }
        for candidate in ["1.0", "1.1", "1.2", "1.3"] where digits == candidate || digits == candidate + "0" {
            return "write <string>TLSv\(candidate)</string>"
        }
        return "write one of TLSv1.0, TLSv1.1, TLSv1.2, TLSv1.3 as a <string>"
    }
}

extension Substring {
    var trimmingSpaces: String {
        String(self.drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed())
    }
}
