/// Keys in `NSExceptionDomains` that are not hosts, and entries that do the opposite of what
/// listing them was for: the mistakes real Info.plists make with exception domains, apart from
/// the parsing of the entries themselves (ExceptionDomainParser.swift).
extension PolicyParser {
    /// Under an honoured `NSAllowsArbitraryLoads` every unlisted host has ATS off, and a listed host
    /// gets only its own entry (Apple: NSExceptionDomains). An entry that is empty, or holds nothing but
    /// `NSIncludesSubdomains` and keys ATS ignores (a legacy key, a typo), therefore switches full ATS
    /// back on for that host: almost always the opposite of what listing it was for. Entries with
    /// real settings are left alone, as tightening a host on purpose is a documented use.
    mutating func noteStricterThanUnlisted(_ policy: TransportSecurityPolicy, base: PolicyKeyPath) {
        guard policy.allowsArbitraryLoads.isTrue, !policy.isArbitraryLoadsCancelled else { return }
        for exception in policy.exceptions.entries where !exception.isBuiltIn {
            guard exception.keysInEffect.allSatisfy({ $0 == ATSKey.includesSubdomains }),
                let listed = listedDomains[exception.key]
            else { continue }
            let path = base.appending(ATSKey.exceptionDomains).appending(exception.key)
            // A key that never matches (a wildcard, a port) tightens nothing; it has its own finding.
            guard !findings.contains(where: { $0.code == "never_matches" && $0.path == path }) else { continue }
            let ignored = listed.keys.filter { $0 != ATSKey.includesSubdomains }
            let ignoredList = ignored.joined(separator: ", ")
            let how =
                ignored.isEmpty
                ? (exception.includesSubdomains ? "an entry holding only NSIncludesSubdomains" : "an empty entry")
                : listed.keys.contains(ATSKey.includesSubdomains)
                    ? "an entry holding only NSIncludesSubdomains and keys ATS ignores (\(ignoredList))"
                    : "an entry holding only keys ATS ignores (\(ignoredList))"
            let scope = exception.includesSubdomains ? "\(exception.key) and its subdomains" : exception.key
            // The empty-entry note says less than this; one finding per mistake.
            findings.removeAll { $0.code == "empty_exception" && $0.path == path }
            note(
                .warning, "stricter_than_unlisted", path,
                "listing \(PolicyKeyPath.quoted(exception.key)) with \(how) turns full ATS back on for \(scope): "
                    + "http:// is blocked and HTTPS needs TLS 1.2+, forward secrecy and ATS-strength certificates, "
                    + "while every host you did not list has ATS off (NSAllowsArbitraryLoads): the listing makes it "
                    + "stricter than unlisted hosts",
                fix: "if it should be as open as unlisted hosts, remove the entry; to allow only http://, write "
                    + "NSExceptionAllowsInsecureHTTPLoads = YES in it",
                at: listed.location)
        }
    }

    /// The ATS key a key of `NSExceptionDomains` spells, exactly or one slip away (a letter, a case):
    /// such a key was meant for a domain's dictionary or for `NSAppTransportSecurity`, not as a host.
    /// Host names never start with `NS` and a capital, so this cannot swallow a real host.
    static func atsKeyMeant(by key: String) -> String? {
        let names = ATSKey.domainKeys + ATSKey.legacyDomainKeys.map(\.legacy) + ATSKey.globalKeys + ATSKey.pinKeys
        if names.contains(key) { return key }
        if let raw = XcodeDisplayName.rawKey(for: key) { return raw }
        guard key.hasPrefix("NS") || key.hasPrefix("ns") else { return nil }
        return names.first { KeySuggestions.editDistance(key.lowercased(), $0.lowercased()) <= 1 }
            ?? KeySuggestions.closest(to: key, among: names)
    }

    /// The host entry a stray key most likely belongs to: the dictionary entry written just before
    /// it (generators and hand edits close a domain's `<dict>` one key too early), else the next one.
    static func neighbourDomain(of index: Int, in domains: [PropertyListEntry]) -> String? {
        func isHost(_ entry: PropertyListEntry) -> Bool {
            if case .dictionary = entry.value.value, atsKeyMeant(by: entry.key) == nil { return true }
            return false
        }
        return domains[..<index].last(where: isHost)?.key ?? domains[(index + 1)...].first(where: isHost)?.key
    }

    /// An ATS key written straight inside `NSExceptionDomains`: Apple reads it as a host named like
    /// the key, skips it (its value is not a dictionary, or the capitals never match), and so the
    /// setting is lost. Say where it belongs rather than calling it a host.
    mutating func noteKeyAmongDomains(
        _ entry: PropertyListEntry, meant: String, neighbour: String?, at path: PolicyKeyPath
    ) {
        let legacyCurrent = ATSKey.legacyDomainKeys.first { $0.legacy == meant }?.current
        let isGlobal = ATSKey.globalKeys.contains(meant)
        let what = isGlobal ? "a key of NSAppTransportSecurity" : "a key of an exception domain's dictionary"
        var message =
            entry.key == meant
            ? "\(entry.key) is \(what), not a host"
            : XcodeDisplayName.rawKey(for: entry.key) == meant
                ? "\"\(entry.key)\" is Xcode's display name for \(meant), \(what), not a host"
                : "\(entry.key) is a misspelling of \(meant), \(what), not a host"
        message +=
            ": written directly inside NSExceptionDomains it is misplaced, ATS takes it for a host entry "
            + "that never matches, and the setting is lost"
        if let legacyCurrent { message += "; \(meant) is also a legacy key ATS no longer reads (now \(legacyCurrent))" }
        let name = legacyCurrent ?? meant
        let rename = name == entry.key ? "" : " and name it \(name)"
        let fix: String
        if isGlobal {
            fix = "move it up into the NSAppTransportSecurity dictionary\(rename)"
        } else if meant == ATSKey.pinnedCAIdentities || meant == ATSKey.pinnedLeafIdentities {
            // Pins only work under NSPinnedDomains, never in an exception entry.
            fix = "move it into NSPinnedDomains[\(PolicyKeyPath.quoted(neighbour ?? "host"))]\(rename)"
        } else if let neighbour {
            fix = "move it into the dictionary of \(PolicyKeyPath.quoted(neighbour))\(rename)"
        } else {
            fix = "move it into a host's dictionary (<key>host</key><dict>…</dict>) in NSExceptionDomains\(rename)"
        }
        note(.error, "misplaced_key", path, message, fix: fix, at: entry.keyLocation)
    }
}
