import ATSPolicy

/// A day of logged traffic turned into the narrowest `NSAppTransportSecurity` that lets it through:
/// per-host judgements, the suggested entries, the hosts no key can fix and, against a current
/// policy, its unneeded keys and the keys it lacks.
package struct TrafficReport: Sendable {
    /// Every host seen, sorted by name (addresses after names).
    package let assessments: [HostAssessment]
    package let folds: [SubdomainFold]
    package let refusedFolds: [RefusedFold]
    /// The suggested `NSExceptionDomains` entries, sorted by key.
    package let entries: [(domain: String, exception: SuggestedException)]
    /// The suggested entry that covers each host needing an exception.
    package let entryKey: [HostIdentity: String]
    /// Compared with `--policy`: nil without one.
    package let unused: [UnusedKey]?
    package let missing: [MissingKey]?

    /// - Parameters:
    ///   - settings: the policy settings the suggestion is for (OS and cipher profile, local networks).
    ///   - clientClass: which API the logged traffic stands for (the log does not record it).
    ///   - currentPolicy: the app's policy now, to compare with.
    package init(
        traffic: [HostTraffic], settings: PolicySettings, clientClass: ClientClass = .urlsession,
        currentPolicy: TransportSecurityPolicy? = nil
    ) {
        let rules = NeedsRules(settings: settings)
        assessments = traffic.map(rules.assess).sorted { Self.order($0.host, $1.host) }

        var foldInput: [(name: String, needs: SuggestedException, wantsEntry: Bool)] = []
        for assessment in assessments where !assessment.isLocal && assessment.disposition != .unreached {
            guard case .name(let name) = assessment.host else { continue }
            foldInput.append((name, assessment.needs, assessment.disposition == .needsException))
        }
        (folds, refusedFolds) = SubdomainFolding.fold(foldInput)

        var keyForHost: [HostIdentity: String] = [:]
        var entries: [(domain: String, exception: SuggestedException)] = folds.map { ($0.domain, $0.exception) }
        let foldOf = Dictionary(
            folds.flatMap { fold in fold.hosts.map { ($0, fold.domain) } }, uniquingKeysWith: { first, _ in first })
        for assessment in assessments where assessment.disposition == .needsException {
            let name = assessment.host.description
            if let parent = foldOf[name] {
                keyForHost[assessment.host] = parent
            } else {
                keyForHost[assessment.host] = name
                entries.append((name, assessment.needs))
            }
        }
        self.entries = entries.sorted { $0.domain < $1.domain }
        entryKey = keyForHost

        if let currentPolicy {
            let comparison = PolicyComparison(
                policy: currentPolicy, clientClass: clientClass, assessments: assessments, suggestedKey: keyForHost)
            unused = comparison.unused
            missing = comparison.missing
        } else {
            unused = nil
            missing = nil
        }
    }

    /// Names before addresses, each alphabetically.
    static func order(_ a: HostIdentity, _ b: HostIdentity) -> Bool {
        switch (a, b) {
        case (.name(let x), .name(let y)): x < y
        case (.name, .address): true
        case (.address, .name): false
        case (.address, .address): a.description < b.description
        }
    }

    package var unfixable: [HostAssessment] { assessments.filter { $0.disposition == .unfixable } }
    package var exempt: [HostAssessment] { assessments.filter { $0.disposition == .exempt } }

    /// The suggested `NSAppTransportSecurity` dictionary: only `NSExceptionDomains`, never a global key.
    package var suggestedATS: PropertyListValue { SuggestedException.atsDictionary(entries) }

    /// The suggestion as XML to paste inside an Info.plist's top-level `<dict>`.
    package var infoPlistFragment: String { SuggestedException.infoPlistFragment(entries) }
}
