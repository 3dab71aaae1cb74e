extension TransportSecurityPolicy {
    /// The effective requirements for a host, following docs/ats-rules.md, "Which rule decides, for one connection".
    ///
    /// - Parameters:
    ///   - host: the host the app connects to.
    ///   - scheme: `https` (the default) or `http`.
    ///   - clientClass: which API opened the connection; the settings' default when nil.
    ///   - explaining: whether to write ``Requirements/explanation``; the proxy's hot path skips it.
    public func requirements(
        for host: HostIdentity, scheme: URLScheme = .https, clientClass: ClientClass? = nil, explaining: Bool = true
    ) -> Requirements {
        let clientClass = clientClass ?? settings.clientClass
        let profile = settings.osProfile
        var why = Reasons(enabled: explaining)

        var result = Requirements(
            host: host, scheme: scheme, clientClass: clientClass, rule: RuleSource(kind: .default, key: nil),
            exception: nil, hostIsLocal: isLocal(host), cleartextAllowed: false, atsMinimumsApply: true,
            minimumTLSVersion: .tls12,
            requiresForwardSecrecy: true, suiteRestriction: .forwardSecretOnly, offeredTLS12Suites: [],
            offeredTLS13Suites: CipherProfile.tls13Suites, appMayOverrideTrust: false, pins: nil, niapPackage: nil,
            osProfile: profile, explanation: [])

        if !profile.honoursInfoPlist {
            // The OS's own connections: no app, no Info.plist; full ATS for every host.
            why.add("\(profile.releases) take no Info.plist exception: full ATS for every host")
        } else if let exception = exceptions.lookup(host) {
            applyException(exception, to: &result, why: &why)
        } else if result.hostIsLocal, profile.exemptsLocalHosts, allowsLocalNetworking != .present(false) {
            result.rule = RuleSource(
                kind: .local, key: allowsLocalNetworking.isTrue ? ATSKey.allowsLocalNetworking : nil)
            why.add(localReason(host))
            turnATSOff(&result)
        } else {
            applyGlobalDecision(to: &result, clientClass: clientClass, host: host, why: &why)
        }

        if !result.atsMinimumsApply, profile.lowestTLSVersion > .tls10 {
            why.add(
                "\(profile.releases) refuses TLS 1.0 and 1.1 for every load: TLS 1.2 or later even with ATS off")
        }

        if result.atsMinimumsApply {
            result.offeredTLS12Suites = settings.cipherProfile.offeredSuites(restriction: result.suiteRestriction)
            if profile.honoursNIAP {
                let package = result.exception?.niapPackage ?? niapPackage
                if package == .fcp21 {
                    result.niapPackage = package
                    why.add(
                        "the NIAP FCP_v2.1 package applies: TLS 1.2 only with ECDHE and AES-GCM, and Extended Master Secret"
                    )
                }
            }
        } else {
            result.offeredTLS12Suites = settings.cipherProfile.offeredSuites(restriction: .unrestricted)
        }

        if scheme == .http {
            why.add(
                result.cleartextAllowed
                    ? "cleartext http:// is allowed" : "cleartext http:// is blocked (NSURLErrorDomain -1022)")
        }

        if pins.isEmpty || !profile.honoursInfoPlist {
            // Nothing pinned (the common case, and no string work for it), or no Info.plist read at all.
        } else if scheme == .http {
            if explaining, pins.lookup(host) != nil {
                why.add("NSPinnedDomains does not apply to http:// loads: there is no TLS to pin")
            }
        } else if clientClass == .webkit {
            if explaining, pins.lookup(host) != nil {
                why.add("NSPinnedDomains is not applied to web views (client class webkit)")
            }
        } else if let pinned = pins.lookup(host) {
            result.pins = pinned
            why.add("pinned by NSPinnedDomains " + pinned.domains.map { "\"\($0)\"" }.joined(separator: " and "))
        }
        result.explanation = why.lines
        return result
    }

    /// Parses `host` and answers; for callers holding a string.
    public func requirements(
        forHost host: String, scheme: URLScheme = .https, clientClass: ClientClass? = nil, explaining: Bool = true
    ) throws(HostIdentity.ParseFailure) -> Requirements {
        requirements(
            for: try HostIdentity(parsing: host), scheme: scheme, clientClass: clientClass, explaining: explaining)
    }

    /// Local per the profile (Apple: NSAllowsLocalNetworking; docs/ats-rules.md, "The decisions"): names without a
    /// dot or ending in `.local`, and addresses in `local_networks` (on ios10, every address).
    public func isLocal(_ host: HostIdentity) -> Bool {
        switch host {
        case .name:
            return host.isLocalName
        case .address(let address):
            if settings.osProfile.treatsEveryAddressAsLocal { return true }
            return settings.localNetworks.contains { $0.contains(address) }
        }
    }

    private func applyException(_ exception: DomainException, to result: inout Requirements, why: inout Reasons) {
        result.rule = RuleSource(kind: .exception, key: exception.key)
        result.exception = exception
        let how: String
        switch result.host {
        case .address: how = exception.key.contains("/") ? "as a range" : "as an address"
        case .name(let name): how = exception.key == name ? "exactly" : "as a subdomain"
        }
        why.add(
            (exception.isBuiltIn ? "Apple's built-in exception" : "NSExceptionDomains")
                + " \"\(exception.key)\" matches \(how); global keys do not apply to this host")
        result.cleartextAllowed = exception.allowsInsecureHTTPLoads
        result.appMayOverrideTrust = exception.allowsInsecureHTTPLoads
        result.requiresForwardSecrecy = exception.requiresForwardSecrecy
        let floor = exception.effectiveFloor(on: settings.osProfile)
        if let written = exception.minimumTLSVersion, written != floor {
            why.add("iOS 26 ignores the \(written.plistName) exception: the floor stays at TLSv1.2")
        }
        result.minimumTLSVersion = floor
        why.add("minimum TLS version \(floor.plistName)" + (exception.minimumTLSVersion == nil ? " (default)" : ""))
        if exception.requiresForwardSecrecy {
            result.suiteRestriction = .forwardSecretOnly
            why.add("forward secrecy required (ECDHE suites only)")
        } else if exception.allowsInsecureHTTPLoads {
            // Apple's code leaves the suite list alone in this combination (Apple open source:
            // SecProtocolConfiguration.m).
            result.suiteRestriction = .unrestricted
            why.add(
                "forward secrecy not required and insecure HTTP allowed: the client offers its full default suite list")
        } else {
            result.suiteRestriction = .withCompatibility
            why.add("forward secrecy not required: RSA key-exchange suites are offered too")
        }
        if exception.allowsInsecureHTTPLoads {
            why.add("the app may override trust for this host in its own code (NSExceptionAllowsInsecureHTTPLoads)")
        }
    }

    /// The rule for hosts that no exception names and that are not exempt as local (Apple: NSAllowsArbitraryLoads):
    /// the client-class keys for their own clients, then `NSAllowsArbitraryLoads` unless cancelled.
    public func globalRule(for clientClass: ClientClass) -> RuleSource {
        if settings.osProfile.honoursClientClassKeys {
            if clientClass == .media, allowsArbitraryLoadsForMedia.isTrue {
                return RuleSource(kind: .arbitraryLoads, key: ATSKey.allowsArbitraryLoadsForMedia)
            }
            if clientClass == .webkit, allowsArbitraryLoadsInWebContent.isTrue {
                return RuleSource(kind: .arbitraryLoads, key: ATSKey.allowsArbitraryLoadsInWebContent)
            }
        }
        if allowsArbitraryLoads.isTrue, !isArbitraryLoadsCancelled {
            return RuleSource(kind: .arbitraryLoads, key: ATSKey.allowsArbitraryLoads)
        }
        return RuleSource(kind: .default, key: nil)
    }

    private func applyGlobalDecision(
        to result: inout Requirements, clientClass: ClientClass, host: HostIdentity, why: inout Reasons
    ) {
        let profile = settings.osProfile
        let rule = globalRule(for: clientClass)
        result.rule = rule
        switch rule.key {
        case ATSKey.allowsArbitraryLoadsForMedia?:
            why.add("NSAllowsArbitraryLoadsForMedia turns ATS off for media loads (client class media)")
        case ATSKey.allowsArbitraryLoadsInWebContent?:
            why.add("NSAllowsArbitraryLoadsInWebContent turns ATS off for web views (client class webkit)")
        default:
            if result.hostIsLocal, !profile.exemptsLocalHosts {
                why.add("\(host) is local, but iOS 9 applies ATS to local hosts too")
            } else if result.hostIsLocal {
                why.add("\(host) is local, but NSAllowsLocalNetworking = NO applies ATS to local hosts")
            } else if case .address = host, profile.honoursAddressKeys {
                why.add(
                    "\(host) is an IP address outside local_networks: since iOS 17 it is not exempt as a local host")
            }
            if rule.kind == .arbitraryLoads {
                why.add("NSAllowsArbitraryLoads turns ATS off for hosts without an exception")
            } else if allowsArbitraryLoads.isTrue {
                why.add(
                    "NSAllowsArbitraryLoads is ignored because " + arbitraryLoadsCancellers.joined(separator: " and ")
                        + (arbitraryLoadsCancellers.count == 1 ? " is" : " are") + " present (\(profile.releases))")
            }
        }
        if rule.kind == .arbitraryLoads {
            turnATSOff(&result)
        } else {
            why.add("full ATS: TLS 1.2 or later, forward secrecy, SHA-256 certificates with RSA 2048 / ECC 256 keys")
        }
    }

    private func turnATSOff(_ result: inout Requirements) {
        result.cleartextAllowed = true
        result.atsMinimumsApply = false
        result.minimumTLSVersion = nil
        result.requiresForwardSecrecy = false
        result.suiteRestriction = .unrestricted
        result.appMayOverrideTrust = true
    }

    private func localReason(_ host: HostIdentity) -> String {
        let what: String
        switch host {
        case .name(let name):
            what = name.hasSuffix(".local") || name.hasSuffix(".local.") ? "a .local name" : "an unqualified name"
        case .address:
            what = settings.osProfile.treatsEveryAddressAsLocal ? "an IP address" : "a local address (local_networks)"
        }
        let key =
            allowsLocalNetworking.isTrue ? "NSAllowsLocalNetworking" : "the \(settings.osProfile.releases) default"
        return "\(host) is \(what): \(key) exempts it from ATS (default trust evaluation still applies)"
    }
}

/// The "why" lines of a requirements answer, built only when asked for: string building would
/// otherwise dominate the cost of a lookup.
struct Reasons {
    let enabled: Bool
    private(set) var lines: [String] = []

    init(enabled: Bool) { self.enabled = enabled }

    mutating func add(_ line: @autoclosure () -> String) {
        if enabled { lines.append(line()) }
    }
}
