import ATSPolicy

/// What one host needs from an app's ATS policy for its logged traffic to pass, and whether any
/// policy can give it.
package struct HostAssessment: Sendable {
    package enum Disposition: String, Sendable {
        /// Passes under the ATS defaults: no exception.
        case compliant
        /// Passes with the relaxations in ``HostAssessment/needs``.
        case needsException = "needs_exception"
        /// A local host (no dot, `.local`, a local address): exempt from ATS without any key.
        case exempt
        /// Fails for a reason no `NSExceptionDomains` key changes (a bad certificate, SSL 3.0, a
        /// suite no Apple client offers, a wrong pin).
        case unfixable
        /// Only ever unreachable: the log shows nothing of what it needs.
        case unreached
    }

    /// A reason the host fails whatever the policy says.
    package struct Blocker: Sendable, Equatable {
        /// The violation name (`expired`, `untrusted_chain`, …).
        package var violation: String
        /// The log's explanation, and what would fix it instead of an ATS key.
        package var reason: String
    }

    package let traffic: HostTraffic
    package let isLocal: Bool
    /// The relaxations the traffic calls for (never `includesSubdomains`), whatever the disposition:
    /// `--policy` compares them with what an existing entry grants even for a local host.
    package let needs: SuggestedException
    /// Why each relaxation is needed, in words, one per relaxation.
    package let reasons: [String]
    package let blockers: [Blocker]

    package var host: HostIdentity { traffic.host }

    package var disposition: Disposition {
        if !blockers.isEmpty { return .unfixable }
        if isLocal { return .exempt }
        if !traffic.hasFacts { return .unreached }
        return needs.relaxesNothing ? .compliant : .needsException
    }
}

/// The rules that turn a host's logged facts into needs, for one set of policy settings.
///
/// Facts first, violations second: a log's violations are relative to the policy the daemon ran
/// with, so a host that policy already excepted logs none. The probe's `tls` facts are not: the
/// probe offers every version from the floor up, so the version is the server's best, and a
/// non-forward-secret suite is one the server chose among those offered. Violations fill in
/// where the log has no facts (a ClientHello's server name is judged without its own `tls`), and
/// certificate failures come from them alone (the log keeps too little of a certificate to judge it).
package struct NeedsRules: Sendable {
    package let settings: PolicySettings
    private let defaults: TransportSecurityPolicy

    package init(settings: PolicySettings) {
        self.settings = settings
        defaults = TransportSecurityPolicy(settings: settings)
    }

    /// Violations no per-host key fixes: trust, certificate strength and dates, CT. (`tls_version`
    /// and `cipher_not_ats` are judged from the facts where there are some; `pin_mismatch`,
    /// `handshake_failure` and `niap_*` get advice of their own.)
    static let certificateViolations: Set<String> = [
        "untrusted_chain", "name_mismatch", "expired", "not_yet_valid", "key_size", "sig_hash_leaf", "sig_hash_chain",
        "validity_too_long", "no_serverauth_eku", "ct",
    ]

    /// Whether the profile honours TLS 1.0/1.1 floors (iOS 26 does not).
    private var honoursLegacyFloors: Bool {
        var probe = DomainException(key: "probe")
        probe.minimumTLSVersion = .tls10
        return probe.effectiveFloor(on: settings.osProfile) == .tls10
    }

    package func assess(_ traffic: HostTraffic) -> HostAssessment {
        let isLocal = defaults.requirements(for: traffic.host, explaining: false).rule.kind == .local
        var needs = SuggestedException()
        var reasons: [String] = []
        var blockers: [HostAssessment.Blocker] = []

        if traffic.cleartextSeen || traffic.violations["cleartext"] != nil {
            needs.allowsInsecureHTTPLoads = true
            reasons.append("loaded over http://")
        }
        // A local host is exempt from ATS: only what default trust rejects (certificates) blocks it.
        if !isLocal {
            judgeVersion(traffic, &needs, &reasons, &blockers)
            judgeSuites(traffic, &needs, &reasons, &blockers)
        } else if settings.osProfile.lowestTLSVersion > .tls10 {
            // iOS 26 refuses TLS 1.0/1.1 for local hosts too: the exemption does not reach the version.
            judgeVersion(traffic, &needs, &reasons, &blockers)
        }
        for name in traffic.violationNames {
            let explanation = traffic.violations[name] ?? ""
            if Self.certificateViolations.contains(name) {
                blockers.append(
                    .init(
                        violation: name,
                        reason: Self.sentence(
                            explanation, "no ATS key relaxes certificate checks: the server's certificate must be fixed"
                        )))
            } else if name == "pin_mismatch" {
                blockers.append(
                    .init(
                        violation: name,
                        reason: Self.sentence(
                            explanation,
                            "NSPinnedDomains is wrong for this server, not something an exception allows: fix the pins")
                    ))
            } else if name == "handshake_failure" {
                blockers.append(
                    .init(
                        violation: name,
                        reason: Self.sentence(
                            explanation,
                            "no ATS key changes the key-exchange groups and signature schemes an Apple client offers: the server must accept X25519 or P-256"
                        )))
            } else if name.hasPrefix("niap_") {
                blockers.append(
                    .init(
                        violation: name,
                        reason: Self.sentence(
                            explanation,
                            "report proposes no NIAP opt-out (NSExceptionRequiresNIAPTLSPackageVersion = none)")))
            }
        }
        return HostAssessment(traffic: traffic, isLocal: isLocal, needs: needs, reasons: reasons, blockers: blockers)
    }

    private func judgeVersion(
        _ traffic: HostTraffic, _ needs: inout SuggestedException, _ reasons: inout [String],
        _ blockers: inout [HostAssessment.Blocker]
    ) {
        let lowest: TLSVersion?
        let seen: String
        if let fact = traffic.versions.keys.min() {
            lowest = fact
            seen = "negotiated \(fact.humanName) (\(Self.count(traffic.versions[fact] ?? 0)))"
        } else if let explanation = traffic.violations["tls_version"] {
            // Judged from the violation alone (a ClientHello's server name): the explanation names the version.
            lowest = [TLSVersion.ssl3, .tls10, .tls11, .tls12].first {
                explanation.contains("negotiated \($0.humanName)")
            }
            seen = "negotiated \(lowest?.humanName ?? "an unknown version") (from the logged violation)"
            if lowest == nil {
                blockers.append(
                    .init(
                        violation: "tls_version",
                        reason: Self.sentence(
                            explanation, "the log does not say which version, so report cannot propose a floor")))
                return
            }
        } else {
            return
        }
        guard let lowest, lowest < .tls12 else { return }
        if lowest < .tls10 {
            blockers.append(
                .init(
                    violation: "tls_version",
                    reason:
                        "the server \(seen); no iOS release speaks it, and no ATS key changes that: the server must enable TLS 1.2"
                ))
        } else if !honoursLegacyFloors {
            blockers.append(
                .init(
                    violation: "tls_version",
                    reason:
                        "the server \(seen); \(settings.osProfile.releases) refuses TLS 1.0 and 1.1 for every load, whatever the policy (NSExceptionMinimumTLSVersion below TLSv1.2 included): the server must enable TLS 1.2"
                ))
        } else {
            needs.minimumTLSVersion = lowest
            reasons.append(seen)
        }
    }

    private func judgeSuites(
        _ traffic: HostTraffic, _ needs: inout SuggestedException, _ reasons: inout [String],
        _ blockers: inout [HostAssessment.Blocker]
    ) {
        let profile = settings.cipherProfile
        var notForwardSecret: [String] = []
        for (name, count) in traffic.suites.sorted(by: { $0.key < $1.key }) {
            guard let suite = CipherSuite(name: name) else {
                blockers.append(
                    .init(
                        violation: "cipher_not_ats",
                        reason:
                            "the server chose \(name), which no Apple client offers: the server must enable an ECDHE suite"
                    ))
                continue
            }
            if CipherProfile.tls13Suites.contains(suite) || profile.forwardSecretSuites.contains(suite) { continue }
            if profile.compatibilitySuites.contains(suite) {
                notForwardSecret.append("\(name) (\(Self.count(count)))")
            } else if profile.legacySuites.contains(suite), traffic.cleartextSeen {
                // With insecure HTTP allowed anyway, forward secrecy off lifts every restriction on suites.
                notForwardSecret.append("\(name) (\(Self.count(count)); offered once insecure HTTP is allowed)")
            } else if profile.legacySuites.contains(suite) {
                blockers.append(
                    .init(
                        violation: "cipher_not_ats",
                        reason:
                            "the server chose \(name), which an ATS client offers only with NSExceptionRequiresForwardSecrecy = NO and NSExceptionAllowsInsecureHTTPLoads = YES; report allows cleartext only to hosts seen over http://: the server must enable an ECDHE suite"
                    ))
            } else {
                let why =
                    switch suite.keyExchange {
                    case .dhe: "Apple clients never offer DHE suites"
                    case .tls13: "no Apple client offers this TLS 1.3 suite"
                    default: "no ATS client offers it (\(profile.rawValue) cipher profile)"
                    }
                let remedy =
                    suite.keyExchange == .tls13
                    ? "TLS_AES_128_GCM_SHA256 or another suite Apple offers" : "an ECDHE suite"
                blockers.append(
                    .init(
                        violation: "cipher_not_ats",
                        reason: "the server chose \(name); \(why): the server must enable \(remedy)"))
            }
        }
        if traffic.suites.isEmpty, traffic.violations["cipher_not_fs"] != nil {
            notForwardSecret.append("a suite without forward secrecy (from the logged violation)")
        }
        if traffic.suites.isEmpty, let explanation = traffic.violations["cipher_not_ats"] {
            blockers.append(
                .init(
                    violation: "cipher_not_ats",
                    reason: Self.sentence(
                        explanation, "no ATS key makes an Apple client offer it: the server must enable an ECDHE suite")
                ))
        }
        if !notForwardSecret.isEmpty {
            needs.disablesForwardSecrecy = true
            reasons.append("chose " + notForwardSecret.joined(separator: ", ") + " without forward secrecy")
        }
    }

    static func count(_ connections: Int) -> String { connections == 1 ? "1 connection" : "\(connections) connections" }

    /// The log's explanation, then the advice: "the leaf … expired on …; no ATS key relaxes …".
    static func sentence(_ explanation: String, _ advice: String) -> String {
        explanation.isEmpty ? advice : explanation + "; " + advice
    }
}
