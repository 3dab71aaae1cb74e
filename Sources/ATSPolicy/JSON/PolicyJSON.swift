import TextFormats

// The JSON forms of policy answers. They are part of atsproxy's contract: `explain --json`, `check
// --json` and the proxy's log use them, so fields are only ever added, never renamed.

extension RuleSource: JSONObjectWritable {
    public func writeMembers(to sink: inout some JSONObjectSink) {
        sink.add("kind", string: kind.rawValue)
        sink.add("key", string: key)
    }
}

extension CipherSuite {
    public var json: JSONValue { .object([("id", .string(hexID)), ("name", .string(ianaName))]) }
}

extension PinRequirement {
    public var json: JSONValue {
        func hashes(_ set: Set<SPKIHash>?) -> JSONValue {
            set.map { .strings($0.sorted().map(\.base64)) } ?? .null
        }
        return .object([
            ("domains", .strings(domains)),
            ("leaf", hashes(leafIdentities)),
            ("ca", hashes(caIdentities)),
            ("fails_closed", .bool(leafIdentities?.isEmpty == true || caIdentities?.isEmpty == true)),
        ])
    }
}

extension Requirements {
    /// One line of `atsproxyctl explain --json`.
    public var json: JSONValue {
        .object([
            ("host", .string(host.description)),
            ("scheme", .string(scheme.rawValue)),
            ("client", .string(clientClass.rawValue)),
            ("os_profile", .string(osProfile.rawValue)),
            ("rule", rule.json),
            ("cleartext_allowed", .bool(cleartextAllowed)),
            ("ats_applies", .bool(atsMinimumsApply)),
            ("min_tls_version", .optional(minimumTLSVersion?.plistName)),
            // The OS's own floor, policy or not (TLSv1.2 on iOS 26): what still holds where ATS is off.
            ("os_min_tls_version", .string(osProfile.lowestTLSVersion.plistName)),
            ("requires_forward_secrecy", .bool(requiresForwardSecrecy)),
            ("suite_restriction", .string(suiteRestriction.rawValue)),
            ("tls12_suites", .array(offeredTLS12Suites.map(\.json))),
            ("tls13_suites", .array(offeredTLS13Suites.map(\.json))),
            ("trust_overridable", .bool(appMayOverrideTrust)),
            ("pins", pins?.json ?? .null),
            ("niap", .optional(niapPackage?.rawValue)),
            ("why", .strings(explanation)),
        ])
    }
}

extension AppleError: JSONObjectWritable {
    public func writeMembers(to sink: inout some JSONObjectSink) {
        sink.add("nsurl", int: Int64(nsurl))
        sink.add("ssl", ssl.map { JSONValue.int($0) })
    }
}

/// `{"name": "x25519", "codepoint": 29}`: the group by the registry's name and number, as the log,
/// HAR and `diagnose` write it (a reader matches the number; the name is for people).
extension KeyExchangeGroup: JSONObjectWritable {
    public func writeMembers(to sink: inout some JSONObjectSink) {
        sink.add("name", string: name)
        sink.add("codepoint", int: Int64(codepoint))
    }
}

extension Violation {
    public var json: JSONValue {
        .object([
            ("name", .string(kind.name)),
            ("error", error.json),
            ("explanation", .string(explanation)),
            ("allowed_by", .optional(allowedBy)),
        ])
    }
}

extension Verdict {
    public var json: JSONValue {
        .object([
            ("compliant", .bool(isCompliant)),
            ("rule", requirements.rule.json),
            ("violations", .strings(violations.map(\.kind.name))),
            ("error", error?.json ?? .null),
            ("details", .array(violations.map(\.json))),
        ])
    }
}

extension Finding {
    public var json: JSONValue {
        var fields: [(String, JSONValue)] = [
            ("severity", .string(severity.rawValue)),
            ("code", .string(code)),
            ("path", .string(path.description)),
            ("message", .string(message)),
            ("fix", .optional(fix)),
        ]
        if let line = location.line { fields.append(("line", .int(line))) }
        if let offset = location.byteOffset { fields.append(("byte_offset", .int(offset))) }
        return .object(fields)
    }
}

extension ChainTrust {
    /// `system_root`, `apple_root`, `user_installed_root`, `app_anchor` or `untrusted`: the log's and
    /// `diagnose --json`'s spelling.
    public var name: String {
        switch self {
        case .anchored(.system): "system_root"
        case .anchored(.appleSystem): "apple_root"
        case .anchored(.user): "user_installed_root"
        case .anchored(.app): "app_anchor"
        case .untrusted: "untrusted"
        }
    }
}

extension IntermediateFetch {
    /// One of the log's `tls.intermediate_fetches` and `diagnose --json`'s: `url`, `result` (`fetched`
    /// or `failed`), the fetched `certificates`' subjects or the failure's `reason`, and whether the
    /// answer was `cached`.
    public var json: JSONValue {
        var fields: [(String, JSONValue)] = [("url", .string(url)), ("result", .string(result))]
        switch outcome {
        case .fetched(let subjects): fields.append(("certificates", .strings(subjects)))
        case .failed(let reason): fields.append(("reason", .string(reason)))
        }
        fields.append(("cached", .bool(cached)))
        return .object(fields)
    }
}

extension CertificateFacts {
    /// The fields the log's `tls.certificates` has for each certificate (`diagnose` adds more).
    public var summaryFields: [(String, JSONValue)] {
        [
            ("subject", .string(subject)),
            ("key_type", .string(keyType.rawValue)),
            ("key_bits", .int(keyBits)),
            ("sig_alg", .string(signatureAlgorithm)),
            ("not_before", .string(DateFormat.rfc3339(notBefore))),
            ("not_after", .string(DateFormat.rfc3339(notAfter))),
        ]
    }
}
