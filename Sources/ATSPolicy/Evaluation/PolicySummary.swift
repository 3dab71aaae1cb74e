import TextFormats

/// What a policy allows, in plain words, for `atsproxyctl check` (and later `status`).
public struct PolicySummary: Sendable {
    public var lines: [String]
    public var json: JSONValue
}

extension TransportSecurityPolicy {
    public var summary: PolicySummary {
        var lines: [String] = []
        let profile = settings.osProfile
        lines.append(
            "Modelled on \(profile.releases) (os_profile \(profile.rawValue)), cipher profile \(settings.cipherProfile.rawValue)."
        )
        if !hasATSDictionary {
            lines.append("No NSAppTransportSecurity dictionary: every host gets the ATS defaults.")
        }

        // Hosts that no exception names, per client class.
        var defaults: [(String, JSONValue)] = []
        for clientClass in ClientClass.allCases {
            let rule = globalRule(for: clientClass)
            let atsApplies = rule.kind == .default
            let words: String
            if atsApplies {
                words = "full ATS: HTTPS only, TLS 1.2 or later, forward secrecy, strong certificates"
            } else {
                words =
                    "ATS off (\(rule.key ?? "")): cleartext HTTP allowed, default trust still applies"
                    + (profile.lowestTLSVersion > .tls10
                        ? ", and \(profile.releases) still refuses TLS 1.0 and 1.1" : "")
            }
            let who: String
            switch clientClass {
            case .urlsession: who = "URLSession loads"
            case .webkit: who = "Web views"
            case .media: who = "Media (AVFoundation) loads"
            }
            lines.append("\(who) to hosts without an exception: \(words).")
            defaults.append((clientClass.rawValue, .object([("rule", rule.json), ("ats_applies", .bool(atsApplies))])))
        }
        let cancellers = arbitraryLoadsCancellers
        if allowsArbitraryLoads.isTrue, !cancellers.isEmpty {
            lines.append(
                "NSAllowsArbitraryLoads only affects iOS 9: " + cancellers.joined(separator: " and ")
                    + " cancel\(cancellers.count == 1 ? "s" : "") it from iOS 10.")
        }

        let local = localHostsSentence
        lines.append(local)

        var exceptionJSON: [JSONValue] = []
        if exceptions.isEmpty {
            lines.append("No exception domains.")
        } else {
            lines.append("Exception domains (\(exceptions.count)); listed hosts ignore the global keys:")
            for exception in exceptions.entries.sorted(by: { $0.key < $1.key }) {
                lines.append("  " + describe(exception))
                exceptionJSON.append(
                    .object([
                        ("domain", .string(exception.key)),
                        ("includes_subdomains", .bool(exception.includesSubdomains)),
                        ("cleartext_allowed", .bool(exception.allowsInsecureHTTPLoads)),
                        ("min_tls_version", .string(exception.effectiveFloor(on: settings.osProfile).plistName)),
                        ("requires_forward_secrecy", .bool(exception.requiresForwardSecrecy)),
                        ("built_in", .bool(exception.isBuiltIn)),
                    ]))
            }
        }

        var pinJSON: [JSONValue] = []
        if !pins.isEmpty {
            lines.append("Pinned domains (\(pins.count)); not applied to web views:")
            for pinned in pins.entries.sorted(by: { $0.key < $1.key }) {
                var parts: [String] = []
                if let leaf = pinned.leafIdentities {
                    parts.append(
                        leaf.isEmpty
                            ? "leaf pinned with no valid key (every connection fails)" : "leaf key one of \(leaf.count)"
                    )
                }
                if let ca = pinned.caIdentities {
                    parts.append(
                        ca.isEmpty
                            ? "CA pinned with no valid key (every connection fails)" : "a CA key one of \(ca.count)")
                }
                let scope = pinned.includesSubdomains ? "\(pinned.key) and its direct subdomains" : pinned.key
                lines.append("  \(scope): " + parts.joined(separator: "; ") + ".")
                pinJSON.append(
                    .object([
                        ("domain", .string(pinned.key)),
                        ("includes_subdomains", .bool(pinned.includesSubdomains)),
                        ("leaf_pins", pinned.leafIdentities.map { .int($0.count) } ?? .null),
                        ("ca_pins", pinned.caIdentities.map { .int($0.count) } ?? .null),
                    ]))
            }
        }

        let json: JSONValue = .object([
            ("root", .string(rootKind.rawValue)),
            ("has_ats_dictionary", .bool(hasATSDictionary)),
            ("os_profile", .string(profile.rawValue)),
            ("hosts_without_exception", .object(defaults)),
            ("local_hosts", .string(local)),
            ("exceptions", .array(exceptionJSON)),
            ("pinned_domains", .array(pinJSON)),
            ("text", .strings(lines)),
        ])
        return PolicySummary(lines: lines, json: json)
    }

    private var localHostsSentence: String {
        let profile = settings.osProfile
        guard profile.exemptsLocalHosts else {
            return "Local hosts: iOS 9 applies ATS to unqualified names, .local names and IP addresses too."
        }
        let addresses =
            profile.treatsEveryAddressAsLocal
            ? "every IP address" : settings.localNetworks.map(\.description).joined(separator: ", ")
        if allowsLocalNetworking == .present(false) {
            return "Local hosts: NSAllowsLocalNetworking = NO, so ATS applies to them too."
        }
        let because = allowsLocalNetworking.isTrue ? "NSAllowsLocalNetworking" : "default"
        let floor =
            profile.lowestTLSVersion > .tls10 ? " \(profile.releases) still refuses TLS 1.0 and 1.1 for them." : ""
        return
            "Local hosts (unqualified names, .local names, \(addresses)) are exempt from ATS (\(because)) unless an exception names them."
            + floor
    }

    private func describe(_ exception: DomainException) -> String {
        let scope = exception.includesSubdomains ? "\(exception.key) and all its subdomains" : exception.key
        var parts: [String] = []
        parts.append(exception.allowsInsecureHTTPLoads ? "cleartext HTTP allowed" : "HTTPS only")
        parts.append("TLS \(exception.effectiveFloor(on: settings.osProfile).humanName.dropFirst(4)) or later")
        parts.append(exception.requiresForwardSecrecy ? "forward secrecy required" : "forward secrecy not required")
        if exception.isBuiltIn { parts.append("Apple built-in") }
        return "\(scope): " + parts.joined(separator: "; ") + "."
    }
}
