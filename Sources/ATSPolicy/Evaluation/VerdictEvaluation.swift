import TextFormats

extension TransportSecurityPolicy {
    /// Judges what was observed against a host's requirements: compliant, or every violation.
    ///
    /// For `http` only cleartext matters. For `https`, protocol checks (version, suite, NIAP) apply
    /// where the ATS minimums do; certificate checks (default trust: Apple, HT210176) apply always, unless
    /// `assume_app_overrides_trust` is set and the app may override trust for this host; pins apply
    /// always (except for web views, whose requirements carry no pins).
    ///
    /// `observed` is what a completed handshake showed. Pass nil only for `http` loads: a handshake
    /// that never completed is not a verdict but a failed connection, which the caller reports as such
    /// (with nil, an `https` load is judged on nothing and comes out compliant).
    public func verdict(for requirements: Requirements, observed: ObservedConnection?) -> Verdict {
        var checker = VerdictChecker(requirements: requirements, settings: settings)
        if requirements.scheme == .http {
            checker.checkCleartext()
        } else if let observed {
            checker.checkProtocol(observed)
            checker.checkCertificates(observed)
        }
        return Verdict(requirements: requirements, violations: checker.violations.sorted { $0.kind < $1.kind })
    }

    /// Judges the facts of a probe whose ATS-shaped handshake may have failed (`observed` then comes
    /// from a permissive handshake). When the facts name no violation, the failure itself is one:
    /// the app's own handshake would have failed the same way.
    public func verdict(
        for requirements: Requirements, observed: ObservedConnection, atsHandshakeFailure: HandshakeFailure?
    ) -> Verdict {
        var verdict = verdict(for: requirements, observed: observed)
        if verdict.isCompliant, let failure = atsHandshakeFailure {
            verdict.violations = [
                Violation(
                    kind: .handshakeFailure, error: failure.appleError,
                    explanation:
                        "the handshake as an ATS client failed although the server's facts break no rule: \(failure.reason)"
                        + (failure.largeHello ? Self.largeHelloHint : ""),
                    allowedBy: nil)
            ]
        }
        return verdict
    }

    /// Why a large hello is the likely cause: the permissive probe's small hello completed, and the
    /// servers and middleboxes that fail iOS 26 devices this way read the hello from one TCP segment.
    static let largeHelloHint =
        "; the ClientHello was iOS 26's (X25519MLKEM768's key share makes it about 1.6 KB, two TCP segments) "
        + "and a small hello completed: the server, or a middlebox before it, likely reads the ClientHello from "
        + "one segment"
}

/// The checks of one verdict; each appends violations with Apple's codes, the facts in words, and
/// the Info.plist setting that would allow it.
struct VerdictChecker {
    let requirements: Requirements
    let settings: PolicySettings
    var violations: [Violation] = []

    init(requirements: Requirements, settings: PolicySettings) {
        self.requirements = requirements
        self.settings = settings
    }

    /// `NSExceptionDomains["host"]`: the entry a fix would go into.
    var entryName: String {
        "NSExceptionDomains[\"\(requirements.exception?.key ?? requirements.host.description)\"]"
    }

    mutating func add(
        _ kind: ViolationKind, _ error: AppleError, _ explanation: String, allowedBy: String? = nil
    ) {
        violations.append(Violation(kind: kind, error: error, explanation: explanation, allowedBy: allowedBy))
    }

    // MARK: - Cleartext

    mutating func checkCleartext() {
        guard !requirements.cleartextAllowed else { return }
        // A local host blocked by NSAllowsLocalNetworking = NO can also be freed by setting it to YES
        // (iOS 10 and later; iOS 9 applies ATS to local hosts whatever the key says).
        let exceptionKey = "\(entryName).NSExceptionAllowsInsecureHTTPLoads = YES"
        let key =
            requirements.rule.kind == .default && requirements.hostIsLocal && settings.osProfile != .ios9
            ? "NSAllowsLocalNetworking = YES, or \(exceptionKey)" : exceptionKey
        add(
            .cleartext, AppleError(nsurl: -1022, ssl: nil),
            "App Transport Security has blocked a cleartext HTTP (http://) resource load to \(requirements.host) "
                + "since it is insecure", allowedBy: key)
    }

    // MARK: - Protocol: version, suite, NIAP

    mutating func checkProtocol(_ observed: ObservedConnection) {
        guard let version = observed.tlsVersion else { return }
        // Below what the OS speaks at all (SSL 3.0 anywhere, TLS 1.0/1.1 on iOS 26): no key helps. Where
        // ATS applies the floor check below says so; with ATS off this is the only version check.
        let osFloor = settings.osProfile.lowestTLSVersion
        if version < osFloor, requirements.minimumTLSVersion == nil {
            let refusal =
                version < .tls10
                ? "which \(settings.osProfile.releases) does not speak"
                : "which \(settings.osProfile.releases) refuses for every load, whatever the policy (even with ATS off)"
            add(
                .tlsVersion, AppleError(nsurl: -1200, ssl: -9836),
                "the server negotiated \(version.humanName), \(refusal)",
                allowedBy: nil)
        }
        if let floor = requirements.minimumTLSVersion, version < floor {
            let allowed: String?
            if version < osFloor || (version < .tls12 && settings.osProfile.ignoresLegacyTLSExceptions) {
                allowed = nil
            } else {
                allowed = "\(entryName).NSExceptionMinimumTLSVersion = \(version.plistName)"
            }
            let ssl = floor == .tls13 && version == .tls12 ? -9800 : -9836
            // On iOS 26 a TLSv1.0/1.1 exception would not help: say so, or the reader goes looking for one.
            let noKey =
                version < .tls12 && settings.osProfile.ignoresLegacyTLSExceptions
                ? "; \(settings.osProfile.releases) refuses \(version.humanName) whatever the policy" : ""
            add(
                .tlsVersion, AppleError(nsurl: -1200, ssl: ssl),
                "the server negotiated \(version.humanName); ATS requires \(floor.humanName) or later for \(requirements.host)"
                    + noKey,
                allowedBy: allowed)
        }
        if let suite = observed.cipherSuite, version < .tls13 {
            checkSuite(suite)
        } else if let suite = observed.cipherSuite, !requirements.offeredTLS13Suites.contains(suite) {
            add(
                .cipherNotATS, AppleError(nsurl: -1200, ssl: -9824),
                "the server chose \(suite.ianaName) (\(suite.hexID)); no Apple client offers it", allowedBy: nil)
        }
        if requirements.niapPackage == .fcp21, version == .tls12 {
            checkNIAP(observed)
        }
        if observed.applicationProtocol == "h2", version == .tls12, let suite = observed.cipherSuite,
            !suite.isAllowedUnderHTTP2
        {
            // What an app's HTTP/2 stack reports here Apple does not document; a client that refuses
            // the connection's security reports a secure-connection failure, -1200.
            add(
                .http2InadequateSecurity, AppleError(nsurl: -1200, ssl: nil),
                "the server chose HTTP/2 with \(suite.ianaName) (\(suite.hexID)), a suite RFC 9113 forbids under "
                    + "HTTP/2 (§9.2.2): an HTTP/2 client ends the connection with INADEQUATE_SECURITY",
                allowedBy: nil)
        }
    }

    private mutating func checkSuite(_ suite: CipherSuite) {
        guard !requirements.offeredTLS12Suites.contains(suite) else { return }
        let profile = settings.cipherProfile
        let error = AppleError(nsurl: -1200, ssl: -9824)
        let name = "\(suite.ianaName) (\(suite.hexID))"
        if requirements.atsMinimumsApply, profile.compatibilitySuites.contains(suite) {
            add(
                .cipherNotForwardSecret, error,
                "the server chose \(name), which is not forward secret; ATS requires ECDHE suites",
                allowedBy: "\(entryName).NSExceptionRequiresForwardSecrecy = NO")
        } else if requirements.atsMinimumsApply, profile.legacySuites.contains(suite) {
            add(
                .cipherNotATS, error,
                "the server chose \(name), which an ATS client offers only when ATS does not restrict suites",
                allowedBy:
                    "\(entryName).NSExceptionRequiresForwardSecrecy = NO with NSExceptionAllowsInsecureHTTPLoads = YES")
        } else {
            let what: String
            switch suite.keyExchange {
            case .dhe: what = "Apple clients never offer DHE suites"
            // Only when another profile's client offers it; ECDHE with Camellia or ARIA no Apple client does.
            case .ecdhe where CipherProfile.allCases.contains { $0.forwardSecretSuites.contains(suite) }:
                what = "the \(profile.rawValue) cipher profile's Apple client does not offer it"
            default: what = "no Apple client offers it"
            }
            add(.cipherNotATS, error, "the server chose \(name); \(what)", allowedBy: nil)
        }
    }

    private mutating func checkNIAP(_ observed: ObservedConnection) {
        let error = AppleError(nsurl: -1200, ssl: -9824)
        let optOut = "\(entryName).NSExceptionRequiresNIAPTLSPackageVersion = none"
        if let suite = observed.cipherSuite, !suite.isECDHEWithAESGCM {
            add(
                .niapCipher, error,
                "the server chose \(suite.ianaName); the NIAP FCP_v2.1 package allows only ECDHE with AES-GCM in TLS 1.2",
                allowedBy: optOut)
        }
        if observed.extendedMasterSecret == false {
            add(
                .niapExtendedMasterSecret, error,
                "the server did not negotiate Extended Master Secret (RFC 7627), which NIAP FCP_v2.1 requires in TLS 1.2",
                allowedBy: optOut)
        }
        if let scheme = observed.serverSignatureScheme, scheme.lowercased().contains("sha1") {
            add(
                .niapSignatureAlgorithm, error,
                "the server signed the handshake with \(scheme); NIAP FCP_v2.1 does not offer SHA-1 signature schemes",
                allowedBy: optOut)
        }
    }

    mutating func checkPins(_ chain: [CertificateFacts]) {
        guard let pins = requirements.pins else { return }
        let domains = pins.domains.map { "\"\($0)\"" }.joined(separator: " and ")
        if let leafPins = pins.leafIdentities {
            let leafHash = chain.first?.spkiSHA256
            if leafPins.isEmpty || leafHash.map({ !leafPins.contains($0) }) ?? true {
                add(
                    .pinMismatch, AppleError(nsurl: -1202, ssl: -9807),
                    leafPins.isEmpty
                        ? "NSPinnedDomains \(domains) pins the leaf with no valid key, so no server can match"
                        : "the leaf key (SPKI-SHA256-BASE64 \(leafHash?.base64 ?? "unknown")) is not among the "
                            + "\(leafPins.count) leaf pins of NSPinnedDomains \(domains)")
                return
            }
        }
        if let caPins = pins.caIdentities {
            let issuers = chain.dropFirst().compactMap(\.spkiSHA256)
            if chain.count < 2 || !issuers.contains(where: caPins.contains) {
                add(
                    .pinMismatch, AppleError(nsurl: -1202, ssl: -9807),
                    caPins.isEmpty
                        ? "NSPinnedDomains \(domains) pins CAs with no valid key, so no server can match"
                        : "no CA key in the validated chain is among the \(caPins.count) CA pins of NSPinnedDomains \(domains)"
                )
            }
        }
    }
}
