import ATSPolicy

/// A key of the current policy that the observed traffic never needed.
package struct UnusedKey: Sendable, Equatable {
    /// What to do with the key (the report's `action`; not the log's ``Action``).
    package enum Advice: String, Sendable {
        /// Delete the entry or key: nothing observed relies on it.
        case delete
        /// Keep the key but raise the TLS floor to ``UnusedKey/replacement``: nothing needs it this low.
        case raise
        /// Observed hosts rely on it, but the suggested per-host entries cover them: delete it once they are in.
        case replace
    }

    /// `NSExceptionDomains › old.example.com › NSExceptionRequiresForwardSecrecy`.
    package var path: String
    /// The value written in the policy, in plist spelling (`true`, `TLSv1.0`), or nil for a whole entry.
    package var value: String?
    package var advice: Advice
    /// The value to write instead, for ``Advice/raise``.
    package var replacement: String?
    package var reason: String
}

/// A relaxation a host's traffic needs that the current policy does not grant it.
package struct MissingKey: Sendable, Equatable {
    package var host: String
    /// Where the suggestion puts it: `NSExceptionDomains › legacy.example.com › NSExceptionMinimumTLSVersion`.
    package var path: String
    package var value: String
    package var reason: String
}

/// Compares a current policy with the traffic: its exceptions the traffic never needed, and what
/// the traffic needs that it lacks.
struct PolicyComparison {
    let policy: TransportSecurityPolicy
    let clientClass: ClientClass
    let assessments: [HostAssessment]
    /// The key the suggestion gives each host's entry (a folded parent, or the host itself).
    let suggestedKey: [HostIdentity: String]

    static let separator = " › "

    /// The hosts whose facts can judge a key: unreachable ones could need anything, and are left out
    /// of every judgement (an entry governing one is not reported unused).
    private var judged: [HostAssessment] { assessments.filter { $0.disposition != .unreached } }

    var unused: [UnusedKey] {
        var keys: [UnusedKey] = []
        for entry in policy.exceptions.entries where !entry.isBuiltIn {
            keys += unused(entry)
        }
        keys += unusedGlobals()
        return keys
    }

    private func governed(by entry: DomainException) -> [HostAssessment] {
        assessments.filter { policy.exceptions.lookup($0.host)?.key == entry.key }
    }

    private func unused(_ entry: DomainException) -> [UnusedKey] {
        let current = SuggestedException(entry)
        // An entry that relaxes nothing restricts instead (it cancels the global keys for its hosts).
        guard !current.relaxesNothing else { return [] }
        let base = ATSKey.exceptionDomains + Self.separator + entry.key
        let hosts = governed(by: entry)
        if hosts.contains(where: { $0.disposition == .unreached }) { return [] }
        if hosts.isEmpty {
            return [UnusedKey(path: base, value: nil, advice: .delete, reason: "no observed host matches it")]
        }
        if hosts.allSatisfy(\.isLocal) {
            return [
                UnusedKey(
                    path: base, value: nil, advice: .delete,
                    reason: "it matches only local hosts (\(names(hosts))), which are exempt from ATS without it")
            ]
        }
        let needed = hosts.reduce(SuggestedException()) { $0.union($1.needs) }
        var keys: [UnusedKey] = []
        let path = { (key: String) in base + Self.separator + key }
        if let floor = current.minimumTLSVersion {
            if let wanted = needed.minimumTLSVersion, wanted > floor {
                keys.append(
                    UnusedKey(
                        path: path(ATSKey.minimumTLSVersion), value: floor.plistName, advice: .raise,
                        replacement: wanted.plistName,
                        reason: "the lowest version its hosts negotiated is \(wanted.humanName)"))
            } else if needed.minimumTLSVersion == nil {
                keys.append(
                    UnusedKey(
                        path: path(ATSKey.minimumTLSVersion), value: floor.plistName, advice: .delete,
                        reason: "its hosts (\(names(hosts))) all negotiated TLS 1.2 or later"))
            }
        }
        if current.disablesForwardSecrecy, !needed.disablesForwardSecrecy {
            keys.append(
                UnusedKey(
                    path: path(ATSKey.requiresForwardSecrecy), value: "false", advice: .delete,
                    reason: "its hosts (\(names(hosts))) all chose forward-secret suites"))
        }
        if current.allowsInsecureHTTPLoads, !needed.allowsInsecureHTTPLoads {
            keys.append(
                UnusedKey(
                    path: path(ATSKey.allowsInsecureHTTPLoads), value: "true", advice: .delete,
                    reason: "none of its hosts (\(names(hosts))) was loaded over http://"))
        }
        if entry.includesSubdomains, !hosts.contains(where: { $0.host.description != entry.key }) {
            keys.append(
                UnusedKey(
                    path: path(ATSKey.includesSubdomains), value: "true", advice: .delete,
                    reason: "no subdomain of \(entry.key) was seen, only \(entry.key) itself"))
        }
        return keys
    }

    private func unusedGlobals() -> [UnusedKey] {
        var keys: [UnusedKey] = []
        let inForce = policy.globalRule(for: clientClass).key
        let reliant = judged.filter {
            !$0.isLocal && !$0.needs.relaxesNothing
                && policy.requirements(for: $0.host, clientClass: clientClass, explaining: false).rule.kind
                    == .arbitraryLoads
        }
        let globals: [(String, KeyPresence)] = [
            (ATSKey.allowsArbitraryLoads, policy.allowsArbitraryLoads),
            (ATSKey.allowsArbitraryLoadsForMedia, policy.allowsArbitraryLoadsForMedia),
            (ATSKey.allowsArbitraryLoadsInWebContent, policy.allowsArbitraryLoadsInWebContent),
        ]
        for (key, presence) in globals where presence.isTrue {
            if key != inForce {
                let why =
                    key == ATSKey.allowsArbitraryLoads
                    ? "it has no effect here: a key that cancels it (ForMedia, InWebContent or LocalNetworking) is present"
                    : "the traffic is judged as \(clientClass.rawValue) loads (--client-class), which it does not govern; the log does not record which API made a load"
                keys.append(UnusedKey(path: key, value: "true", advice: .delete, reason: why))
            } else if reliant.isEmpty {
                keys.append(
                    UnusedKey(
                        path: key, value: "true", advice: .delete,
                        reason: "no observed host it governs needed any relaxation"))
            } else {
                keys.append(
                    UnusedKey(
                        path: key, value: "true", advice: .replace,
                        reason:
                            "\(names(reliant)) rely on it; the suggested per-host entries let them through without turning ATS off"
                    ))
            }
        }
        return keys
    }

    var missing: [MissingKey] {
        var keys: [MissingKey] = []
        for assessment in judged where assessment.disposition == .needsException {
            let https = policy.requirements(
                for: assessment.host, scheme: .https, clientClass: clientClass, explaining: false)
            let http = policy.requirements(
                for: assessment.host, scheme: .http, clientClass: clientClass, explaining: false)
            // Where the ATS minimums do not apply, every version and suite is allowed.
            let granted = SuggestedException(
                minimumTLSVersion: https.atsMinimumsApply ? https.minimumTLSVersion : .tls10,
                disablesForwardSecrecy: !https.requiresForwardSecrecy, allowsInsecureHTTPLoads: http.cleartextAllowed)
            let needs = assessment.needs
            let key = suggestedKey[assessment.host] ?? assessment.host.description
            let rule =
                https.rule.kind == .exception
                ? "its entry \"\(https.rule.key ?? "")\"" : "the policy (\(https.rule.kind.rawValue) rule)"
            for missingKey in needs.keysBeyond(granted) {
                let value: String
                let why: String
                switch missingKey {
                case ATSKey.minimumTLSVersion:
                    value = needs.minimumTLSVersion?.plistName ?? ""
                    why = "\(rule) sets the floor at \(https.minimumTLSVersion?.plistName ?? "TLSv1.2")"
                case ATSKey.requiresForwardSecrecy:
                    value = "false"
                    why = "\(rule) requires forward secrecy"
                default:
                    value = "true"
                    why = "\(rule) blocks http://"
                }
                let because = assessment.reasons.first { reason in
                    switch missingKey {
                    case ATSKey.minimumTLSVersion: reason.hasPrefix("negotiated")
                    case ATSKey.requiresForwardSecrecy: reason.hasPrefix("chose")
                    default: reason.hasPrefix("loaded")
                    }
                }
                keys.append(
                    MissingKey(
                        host: assessment.host.description,
                        path: ATSKey.exceptionDomains + Self.separator + key + Self.separator + missingKey,
                        value: value,
                        reason: "\(assessment.host) " + (because.map { $0 + "; " } ?? "") + why))
            }
        }
        return keys
    }

    private func names(_ hosts: [HostAssessment]) -> String {
        let sorted = hosts.map(\.host.description).sorted()
        return sorted.count <= 4
            ? sorted.joined(separator: ", ")
            : sorted.prefix(3).joined(separator: ", ") + " and \(sorted.count - 3) more"
    }
}
