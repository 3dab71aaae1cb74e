import TextFormats

extension TransportSecurityPolicy {
    /// Reads a parsed plist: a whole app Info.plist (its `NSAppTransportSecurity` is used; absent
    /// means the ATS defaults) or a file whose root dictionary is the ATS dictionary itself.
    ///
    /// Throws only when the file cannot be a policy at all (its root, or `NSAppTransportSecurity`,
    /// is not a dictionary). Everything Apple's parser would skip or default is a ``Finding``.
    public init(root: PropertyListNode, settings: PolicySettings = .default, file: String = "policy")
        throws(PolicyLoadError)
    {
        self.init(settings: settings)
        guard case .dictionary(let rootEntries) = root.value else {
            throw PolicyLoadError(
                .rootNotDictionary, file: file,
                reason: "the root of the property list is \(root.value.typeNameWithArticle), not a dictionary: "
                    + "expected an app Info.plist or an NSAppTransportSecurity dictionary",
                location: root.location)
        }
        exceptions = ExceptionTable()  // built-ins are re-added after the app's own entries
        var parser = PolicyParser(settings: settings)
        if let ats = root.value.lookup(ATSKey.appTransportSecurity) {
            rootKind = .infoPlist
            basePath = PolicyKeyPath([ATSKey.appTransportSecurity])
            guard case .dictionary = ats.value.value else {
                throw PolicyLoadError(
                    .atsNotDictionary, file: file,
                    reason: "NSAppTransportSecurity is \(ats.value.value.typeNameWithArticle), not a dictionary",
                    location: ats.value.location)
            }
            hasATSDictionary = true
            parser.checkInfoPlistTopLevel(rootEntries)
            parser.parseATSDictionary(ats.value, at: basePath, into: &self)
            parser.reportRepeatedATSBlocks(rootEntries, winner: ats, winnerSummary: summary.lines)
        } else if PolicyParser.looksLikeATSDictionary(rootEntries) {
            rootKind = .atsDictionary
            hasATSDictionary = true
            parser.parseATSDictionary(root, at: basePath, into: &self)
        } else {
            rootKind = .infoPlist
            hasATSDictionary = false
            parser.checkInfoPlistTopLevel(rootEntries)
            parser.findings.append(
                Finding(
                    .info, code: "no_ats_dictionary", path: PolicyKeyPath([ATSKey.appTransportSecurity]),
                    message: "the Info.plist has no NSAppTransportSecurity dictionary: every host gets the ATS defaults"
                ))
        }
        findings = parser.findings
        if settings.builtinExceptions { addBuiltInExceptions() }
    }
}

/// The walk over the ATS dictionary. It mirrors Apple's parser (Apple open source: SecProtocolConfiguration.m) and
/// records a finding for everything that parser would silently skip or default.
struct PolicyParser {
    let settings: PolicySettings
    var findings: [Finding] = []
    /// Where each global key of the ATS dictionary was written (the copy that counts), for findings
    /// about one key that name another's line.
    var globalKeyLocations: [String: SourceLocation] = [:]
    /// Each `NSExceptionDomains` entry read as a host: where its key is and the keys its dictionary holds.
    var listedDomains: [String: (location: SourceLocation, keys: [String])] = [:]

    init(settings: PolicySettings) { self.settings = settings }

    mutating func note(
        _ severity: Finding.Severity, _ code: String, _ path: PolicyKeyPath, _ message: String, fix: String? = nil,
        at location: SourceLocation
    ) {
        findings.append(Finding(severity, code: code, path: path, message: message, fix: fix, location: location))
    }

    /// A root with ATS keys (or nothing at all) is an ATS dictionary; one with app keys (`CFBundle…`,
    /// `UI…`, `LS…`) is an Info.plist, whose top-level ATS keys are then reported as misplaced.
    static func looksLikeATSDictionary(_ entries: [PropertyListEntry]) -> Bool {
        if entries.isEmpty { return true }
        if entries.contains(where: { $0.key.hasPrefix("CF") || $0.key.hasPrefix("UI") || $0.key.hasPrefix("LS") }) {
            return false
        }
        let known = Set(
            ATSKey.globalKeys + ATSKey.domainKeys + ATSKey.legacyDomainKeys.map(\.legacy) + [
                "NSAllowsArbitraryLoadsInMedia"
            ])
        if entries.contains(where: { known.contains($0.key) }) { return true }
        // Only misspelt or invented ATS keys: read it as an ATS dictionary so `check` names them.
        let atsPrefixes = [
            "NSAllows", "NSAllow", "NSException", "NSPinned", "NSTemporary", "NSThirdParty", "NSRequires", "NSIncludes",
        ]
        return entries.contains { entry in
            atsPrefixes.contains { entry.key.hasPrefix($0) }
                || KeySuggestions.closest(to: entry.key, among: ATSKey.globalKeys) != nil
        }
    }

    /// ATS keys written at the top level of an Info.plist have no effect there.
    mutating func checkInfoPlistTopLevel(_ entries: [PropertyListEntry]) {
        for entry in entries where entry.key != ATSKey.appTransportSecurity {
            let path = PolicyKeyPath([entry.key])
            if let raw = XcodeDisplayName.rawKey(for: entry.key) {
                let hasRealBlock = entries.contains { $0.key == ATSKey.appTransportSecurity }
                if raw != ATSKey.appTransportSecurity {
                    noteDisplayName(
                        entry, raw: raw, at: path,
                        effect: "and at the top level of the Info.plist it would not be read anyway",
                        move: "move it into the NSAppTransportSecurity dictionary")
                } else if hasRealBlock {
                    noteDisplayName(
                        entry, raw: raw, at: path,
                        effect: "so this whole dictionary is ignored; only the NSAppTransportSecurity block is read",
                        fix: "merge what you need from it into the NSAppTransportSecurity block, then delete it")
                } else {
                    noteDisplayName(
                        entry, raw: raw, at: path,
                        effect: "so this whole dictionary is ignored and every host gets the ATS defaults")
                }
            } else if ATSKey.globalKeys.contains(entry.key) {
                note(
                    .error, "misplaced_key", path,
                    "\(entry.key) is at the top level of the Info.plist, where ATS does not read it",
                    fix: "move it into the NSAppTransportSecurity dictionary", at: entry.keyLocation)
            } else if KeySuggestions.closest(to: entry.key, among: [ATSKey.appTransportSecurity]) != nil {
                note(
                    .error, "unknown_key", path, "\(entry.key) is not NSAppTransportSecurity: ATS does not read it",
                    fix: "rename it to NSAppTransportSecurity", at: entry.keyLocation)
            }
        }
    }

    /// Two `NSAppTransportSecurity` keys at the root of an Info.plist (a plugin or a merge appending
    /// its own block): CoreFoundation keeps the last, as for every duplicate key, so each earlier
    /// block is lost whole. Each loser gets a finding at its own line saying which block wins and what
    /// the lost block would have allowed, from the difference between the two blocks' summaries.
    mutating func reportRepeatedATSBlocks(
        _ rootEntries: [PropertyListEntry], winner: PropertyListEntry, winnerSummary: [String]
    ) {
        let blocks = rootEntries.filter { $0.key == ATSKey.appTransportSecurity }
        guard blocks.count > 1 else { return }
        let kept = Set(winnerSummary)
        let keptExemptsLocalHosts = winnerSummary.contains { $0.contains("exempt from ATS") }
        // A binary plist stores the key string once, so only the values tell two blocks apart there.
        func position(_ block: PropertyListEntry) -> SourceLocation {
            block.keyLocation.line != nil ? block.keyLocation : block.value.location
        }
        for loser in blocks.dropLast() {
            var lost = TransportSecurityPolicy(settings: settings)
            lost.hasATSDictionary = true
            // A scratch parser: the lost block's own findings are not ATS's concern, it never reads them.
            var scratch = PolicyParser(settings: settings)
            scratch.parseATSDictionary(loser.value, at: PolicyKeyPath([ATSKey.appTransportSecurity]), into: &lost)
            // Only what the lost block sets beyond the kept one: what it allows (its exceptions, ATS off
            // for some client, exempt local hosts), and apart from that its pins, which restrict; not the
            // ways in which it was merely stricter than the kept block.
            var allowed: [String] = []
            var pinned: [String] = []
            var inPins = false
            for line in lost.summary.lines.dropFirst() {
                if line.hasPrefix("Pinned domains") { inPins = true }
                guard !kept.contains(line), !line.hasSuffix(":") else { continue }
                let text = line.trimmingCharacters(in: " ").dropLastPeriod
                if inPins, line.hasPrefix("  ") {
                    pinned.append(text)
                } else if line.hasPrefix("  ") || line.contains("ATS off")
                    || (line.contains("exempt from ATS") && !keptExemptsLocalHosts)
                {
                    allowed.append(text)
                }
            }
            var what =
                allowed.isEmpty
                ? "it allows nothing the kept block does not"
                : "it would have allowed: " + allowed.joined(separator: "; ")
            if !pinned.isEmpty { what += "; and it would have pinned: " + pinned.joined(separator: "; ") }
            note(
                .warning, "duplicate_key", PolicyKeyPath([ATSKey.appTransportSecurity]),
                "NSAppTransportSecurity appears \(blocks.count) times at the top level of the Info.plist: the last one "
                    + "counts (\(position(winner))), so this block (\(position(loser))) is ignored whole; " + what,
                fix: "merge the keys you need into the block at \(position(winner)) and delete this one",
                at: position(loser))
        }
    }

    mutating func parseATSDictionary(
        _ node: PropertyListNode, at base: PolicyKeyPath, into policy: inout TransportSecurityPolicy
    ) {
        guard case .dictionary(let entries) = node.value else { return }
        reportDuplicates(entries, at: base)
        for entry in lastOfEach(entries) {
            let path = base.appending(entry.key)
            globalKeyLocations[entry.key] = entry.keyLocation
            switch entry.key {
            case ATSKey.allowsArbitraryLoads:
                policy.allowsArbitraryLoads = globalBool(entry, at: path)
            case ATSKey.allowsArbitraryLoadsForMedia:
                policy.allowsArbitraryLoadsForMedia = globalBool(entry, at: path)
                noteClientClassKeyOnIOS9(entry, at: path)
            case ATSKey.allowsArbitraryLoadsInWebContent:
                policy.allowsArbitraryLoadsInWebContent = globalBool(entry, at: path)
                noteClientClassKeyOnIOS9(entry, at: path)
            case ATSKey.allowsLocalNetworking:
                policy.allowsLocalNetworking = globalBool(entry, at: path)
                noteClientClassKeyOnIOS9(entry, at: path)
            case ATSKey.exceptionDomains:
                parseExceptionDomains(entry, at: path, into: &policy.exceptions)
            case ATSKey.pinnedDomains:
                parsePinnedDomains(entry, at: path, into: &policy.pins)
            case ATSKey.requiresNIAP:
                if let package = niapPackage(entry, at: path) { policy.niapPackage = package }
            case "NSAllowsArbitraryLoadsInMedia":
                note(
                    .warning, "not_a_key", path,
                    "NSAllowsArbitraryLoadsInMedia is not a key ATS reads: it allows nothing, and it does not "
                        + "cancel NSAllowsArbitraryLoads the way NSAllowsArbitraryLoadsForMedia does",
                    fix: "rename it to NSAllowsArbitraryLoadsForMedia", at: entry.keyLocation)
            default:
                reportUnknownGlobalKey(entry, at: path)
            }
        }
        noteArbitraryLoadsCancelling(policy, base: base)
        noteStricterThanUnlisted(policy, base: base)
    }

    // MARK: - Global keys

    /// A global Boolean: a number is present-true when it is true/1 and present-false otherwise;
    /// any other type is logged by Apple and treated as absent (Apple open source: SecProtocolConfiguration.m).
    /// - Parameter fallback: for per-domain keys, the default a wrongly typed value falls back to.
    mutating func globalBool(_ entry: PropertyListEntry, at path: PolicyKeyPath, fallback: Bool? = nil) -> KeyPresence {
        switch entry.value.value {
        case .bool(let value):
            return .present(value)
        case .integer, .unsignedInteger, .real:
            // NSNumber compares by value: 1 and 1.0 are as true as YES ([@1 isEqual:@YES]); any other
            // number is present-false.
            let value = entry.value.value == .integer(1) || entry.value.value == .real(1)
            note(
                .warning, "number_for_boolean", path,
                "\(entry.key) is \(describe(entry.value.value)), which ATS reads as \(value ? "YES" : "NO")",
                fix: "write <\(value ? "true" : "false")/>", at: entry.value.location)
            return .present(value)
        default:
            note(
                .error, "wrong_type", path,
                "\(entry.key) must be a boolean, but it is \(describe(entry.value.value)): ATS ignores it"
                    + (fallback.map { ", so it keeps its default, \($0 ? "YES" : "NO")" } ?? " as if it were absent"),
                fix: booleanFix(for: entry.value.value), at: entry.value.location)
            return .absent
        }
    }

    mutating func noteClientClassKeyOnIOS9(_ entry: PropertyListEntry, at path: PolicyKeyPath) {
        guard settings.osProfile == .ios9 else { return }
        note(
            .info, "not_on_profile", path, "\(entry.key) exists from iOS 10: the ios9 profile ignores it",
            at: entry.keyLocation)
    }

    /// The iOS 10+ rule that surprises everyone: any of three keys, whatever its value, turns
    /// `NSAllowsArbitraryLoads = YES` off (Apple: NSAllowsArbitraryLoads). Even Apple's documented pattern (the broad
    /// key for iOS 9, a narrow key for iOS 10+) leaves every public `http://` load blocked on a current iPhone, which
    /// is what apps shipping it rarely expect: a warning, so `--strict` fails, naming the lines of both keys. The ios9
    /// profile has no cancellers (the narrow keys did not exist).
    mutating func noteArbitraryLoadsCancelling(_ policy: TransportSecurityPolicy, base: PolicyKeyPath) {
        let cancellers = policy.arbitraryLoadsCancellers
        guard policy.allowsArbitraryLoads.isTrue, !cancellers.isEmpty else { return }
        func written(_ key: String) -> String {
            let location = globalKeyLocations[key] ?? .unknown
            return location == .unknown ? key : "\(key) (\(location))"
        }
        let list = cancellers.map(written).joined(separator: " and ")
        let setToNo = cancellers.filter { key in
            switch key {
            case ATSKey.allowsArbitraryLoadsForMedia: policy.allowsArbitraryLoadsForMedia == .present(false)
            case ATSKey.allowsArbitraryLoadsInWebContent: policy.allowsArbitraryLoadsInWebContent == .present(false)
            default: policy.allowsLocalNetworking == .present(false)
            }
        }
        let noNote =
            setToNo.isEmpty
            ? ""
            : "; \(setToNo.joined(separator: " and ")) set to NO allows nothing and only does the cancelling"
        note(
            .warning, "arbitrary_loads_cancelled", base.appending(ATSKey.allowsArbitraryLoads),
            "\(written(ATSKey.allowsArbitraryLoads)) is ignored on iOS 10 and later because \(list) "
                + (cancellers.count == 1 ? "is" : "are") + " present (whatever the value): on an iPhone every http:// "
                + "load to a public host without an exception is blocked (error -1022), and HTTPS to those hosts "
                + "needs full ATS (TLS 1.2+, forward secrecy); only iOS 9 reads NSAllowsArbitraryLoads" + noNote,
            fix: "to allow http:// to every host, remove \(cancellers.joined(separator: " and ")) "
                + "(NSAllowsArbitraryLoads alone also covers web views, media and local hosts); to keep ATS for "
                + "public hosts, remove NSAllowsArbitraryLoads instead",
            at: globalKeyLocations[ATSKey.allowsArbitraryLoads] ?? .unknown)
    }

    mutating func niapPackage(_ entry: PropertyListEntry, at path: PolicyKeyPath) -> NIAPPackage? {
        guard case .string(let text) = entry.value.value else {
            note(
                .error, "wrong_type", path,
                "\(entry.key) must be a string (none, FCP_v2.1 or recommended), but it is "
                    + "\(describe(entry.value.value)): ignored",
                fix: "write <string>FCP_v2.1</string> or <string>none</string>",
                at: entry.value.location)
            return nil
        }
        guard let package = NIAPPackage(plistValue: text) else {
            note(
                .error, "invalid_value", path,
                "\"\(text)\" is not a NIAP package version (none, FCP_v2.1, recommended): ignored",
                at: entry.value.location)
            return nil
        }
        if !settings.osProfile.honoursNIAP {
            note(
                .info, "not_on_profile", path,
                "\(entry.key) is read from iOS 26.4: the \(settings.osProfile.rawValue) profile ignores it",
                at: entry.keyLocation)
        }
        return package
    }

    /// A key written as Xcode displays it rather than as ATS reads it.
    /// - Parameters:
    ///   - move: where the key belongs when this is not its place, added to the rename.
    ///   - fix: a fix other than the rename.
    mutating func noteDisplayName(
        _ entry: PropertyListEntry, raw: String, at path: PolicyKeyPath, effect: String, move: String? = nil,
        fix: String? = nil
    ) {
        note(
            .error, "display_name", path,
            "\"\(entry.key)\" is Xcode's display name for \(raw), not the key itself: ATS reads only \(raw), "
                + effect,
            fix: fix ?? "rename it to \(raw)" + (move.map { " and \($0)" } ?? "")
                + " (Xcode's Raw Keys & Values view shows the real names)",
            at: entry.keyLocation)
    }

    mutating func reportUnknownGlobalKey(_ entry: PropertyListEntry, at path: PolicyKeyPath) {
        if let raw = XcodeDisplayName.rawKey(for: entry.key) {
            let global = ATSKey.globalKeys.contains(raw)
            let pin = raw == ATSKey.pinnedCAIdentities || raw == ATSKey.pinnedLeafIdentities
            noteDisplayName(
                entry, raw: raw, at: path, effect: "so this setting is ignored",
                move: global
                    ? nil : pin ? "move it into an NSPinnedDomains entry" : "move it into an NSExceptionDomains entry")
            return
        }
        if ATSKey.domainKeys.contains(entry.key) || ATSKey.legacyDomainKeys.contains(where: { $0.legacy == entry.key })
        {
            note(
                .error, "misplaced_key", path,
                "\(entry.key) is a per-domain key: at the top level of NSAppTransportSecurity it has no effect",
                fix: "move it into an NSExceptionDomains entry", at: entry.keyLocation)
            return
        }
        let suggestion = KeySuggestions.closest(to: entry.key, among: ATSKey.globalKeys)
        note(
            .warning, "unknown_key", path, "\(entry.key) is not a key of NSAppTransportSecurity: ATS ignores it",
            fix: suggestion.map { "did you mean \($0)?" }, at: entry.keyLocation)
    }

    /// The entries CoreFoundation keeps: the last one for each key, in file order. Every walk over a
    /// dictionary goes through this, so "the last one counts" holds for every key.
    func lastOfEach(_ entries: [PropertyListEntry]) -> [PropertyListEntry] {
        var lastIndex: [String: Int] = [:]
        for (index, entry) in entries.enumerated() { lastIndex[entry.key] = index }
        return entries.enumerated().filter { lastIndex[$0.element.key] == $0.offset }.map(\.element)
    }

    mutating func reportDuplicates(_ entries: [PropertyListEntry], at path: PolicyKeyPath) {
        var seen: Set<String> = []
        for entry in entries where !seen.insert(entry.key).inserted {
            note(
                .warning, "duplicate_key", path.appending(entry.key),
                "\(entry.key) appears more than once: the last one counts", fix: "remove all but one",
                at: entry.keyLocation)
        }
    }

    // MARK: - Helpers for messages

    /// The value's type with an article, and the value itself for scalars: `a string "YES"`,
    /// `an integer 2`, `an array`.
    func describe(_ value: PropertyListValue) -> String {
        switch value {
        case .string(let text): "a string \"\(text.count > 40 ? String(text.prefix(40)) + "…" : text)\""
        case .integer(let number): "an integer \(number)"
        case .unsignedInteger(let number): "an integer \(number)"
        case .real(let number): "a real \(number)"
        default: value.typeNameWithArticle
        }
    }

    func booleanFix(for value: PropertyListValue) -> String {
        if case .string(let text) = value {
            switch text.lowercased() {
            case "yes", "true", "1": return "write <true/> instead of <string>\(text)</string>"
            case "no", "false", "0": return "write <false/> instead of <string>\(text)</string>"
            default: break
            }
        }
        return "write <true/> or <false/>"
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        String(drop(while: { $0 == set }).reversed().drop(while: { $0 == set }).reversed())
    }

    fileprivate var dropLastPeriod: String { hasSuffix(".") ? String(dropLast()) : self }
}
