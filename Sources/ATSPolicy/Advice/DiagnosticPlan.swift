import TextFormats

/// One load `atsproxyctl diagnose` makes: an ATS dictionary, as `nscurl --ats-diagnostics` tries them.
public struct DiagnosticTest: Sendable {
    /// The heading nscurl prints above a group of tests.
    public var section: String
    /// The test's name as nscurl prints it ("TLSv1.2 with PFS disabled").
    public var name: String
    /// The `NSAppTransportSecurity` dictionary of the load.
    public var atsDictionary: PropertyListValue
    public var role: Role
    /// Whether nscurl runs this test too; atsproxy adds the insecure-HTTP entries nscurl always pairs
    /// with forward secrecy off, so that the smallest passing entry is among the tests.
    public var isFromNSCurl: Bool

    public enum Role: Sendable {
        /// No ATS keys: the defaults.
        case defaults
        /// `NSAllowsArbitraryLoads`: ATS off, default trust still on.
        case allowAllLoads
        /// An `NSExceptionDomains` entry for the host, which relaxes this much.
        case exception(SuggestedException)
    }

    public init(
        section: String, name: String, atsDictionary: PropertyListValue, role: Role, isFromNSCurl: Bool
    ) {
        self.section = section
        self.name = name
        self.atsDictionary = atsDictionary
        self.role = role
        self.isFromNSCurl = isFromNSCurl
    }

    /// What the test's exception entry relaxes, for an exception test.
    public var exception: SuggestedException? {
        if case .exception(let entry) = role { entry } else { nil }
    }
}

/// The tests, in nscurl's order (nscurl(1) --ats-diagnostics; Apple: Identifying the Source of Blocked
/// Connections), then atsproxy's own.
public enum DiagnosticPlan {
    /// The TLS versions nscurl names, highest first, as it prints them; iOS 9 had no TLS 1.3, so a
    /// TLSv1.3 floor is no setting an app of that era could have tried.
    static func versions(on profile: OSProfile) -> [TLSVersion] {
        profile == .ios9 ? [.tls12, .tls11, .tls10] : [.tls13, .tls12, .tls11, .tls10]
    }

    /// The tests for `host` on `profile`: the profile is required, because which floors exist depends on it.
    public static func tests(for host: String, on profile: OSProfile) -> [DiagnosticTest] {
        let versions = versions(on: profile)
        var tests = [
            DiagnosticTest(
                section: "Default ATS Secure Connection", name: "ATS Default Connection",
                atsDictionary: .dictionary([]),
                role: .defaults, isFromNSCurl: true),
            DiagnosticTest(
                section: "Allowing Arbitrary Loads", name: "Allow All Loads",
                atsDictionary: .dictionary(ordered: [(ATSKey.allowsArbitraryLoads, .bool(true))]), role: .allowAllLoads,
                isFromNSCurl: true),
        ]
        func add(
            _ section: String, _ name: String, floor: TLSVersion?, noForwardSecrecy: Bool, insecureHTTP: Bool,
            nscurl: Bool = true
        ) {
            var entry: [(String, PropertyListValue)] = []
            if insecureHTTP { entry.append((ATSKey.allowsInsecureHTTPLoads, .bool(true))) }
            if let floor { entry.append((ATSKey.minimumTLSVersion, .string(floor.plistName))) }
            if noForwardSecrecy { entry.append((ATSKey.requiresForwardSecrecy, .bool(false))) }
            let dictionary = PropertyListValue.dictionary(ordered: [
                (ATSKey.exceptionDomains, .dictionary(ordered: [(host, .dictionary(ordered: entry))]))
            ])
            let relaxes = SuggestedException(
                minimumTLSVersion: floor, disablesForwardSecrecy: noForwardSecrecy,
                allowsInsecureHTTPLoads: insecureHTTP)
            tests.append(
                DiagnosticTest(
                    section: section, name: name, atsDictionary: dictionary, role: .exception(relaxes),
                    isFromNSCurl: nscurl))
        }
        for version in versions {
            add(
                "Configuring TLS exceptions for \(host)", version.plistName, floor: version, noForwardSecrecy: false,
                insecureHTTP: false)
        }
        add(
            "Configuring PFS exceptions for \(host)", "Disabling Perfect Forward Secrecy", floor: nil,
            noForwardSecrecy: true,
            insecureHTTP: false)
        add(
            "Configuring PFS exceptions and allowing insecure HTTP for \(host)",
            "Disabling Perfect Forward Secrecy and Allowing Insecure HTTP", floor: nil, noForwardSecrecy: true,
            insecureHTTP: true)
        for version in versions {
            add(
                "Configuring TLS exceptions with PFS disabled for \(host)", "\(version.plistName) with PFS disabled",
                floor: version, noForwardSecrecy: true, insecureHTTP: false)
        }
        for version in versions {
            add(
                "Configuring TLS exceptions with PFS disabled and insecure HTTP allowed for \(host)",
                "\(version.plistName) with PFS disabled and insecure HTTP allowed", floor: version,
                noForwardSecrecy: true,
                insecureHTTP: true)
        }
        let extra = "Configuring insecure HTTP exceptions for \(host) (atsproxy; nscurl has no such tests)"
        add(extra, "Allowing Insecure HTTP", floor: nil, noForwardSecrecy: false, insecureHTTP: true, nscurl: false)
        for version in versions {
            add(
                extra, "\(version.plistName) with insecure HTTP allowed", floor: version, noForwardSecrecy: false,
                insecureHTTP: true, nscurl: false)
        }
        return tests
    }
}

extension PropertyListValue {
    /// The value as `NSDictionary`'s description prints it, which is how `nscurl --verbose` shows each
    /// test's ATS dictionary: `key = value;`, strings quoted when they hold more than letters and digits.
    public var foundationDescription: String {
        var text = ""
        describe(depth: 0, into: &text)
        return text
    }

    private func describe(depth: Int, into text: inout String) {
        let pad = String(repeating: "    ", count: depth)
        switch self {
        case .dictionary(let entries):
            text += "{\n"
            for entry in entries {
                text += pad + "    " + Self.quotedIfNeeded(entry.key) + " = "
                entry.value.value.describe(depth: depth + 1, into: &text)
                text += ";\n"
            }
            text += pad + "}"
        case .array(let items):
            text += "(\n"
            for (index, item) in items.enumerated() {
                text += pad + "    "
                item.value.describe(depth: depth + 1, into: &text)
                text += index == items.count - 1 ? "\n" : ",\n"
            }
            text += pad + ")"
        case .bool(let flag): text += flag ? "true" : "false"
        case .string(let string): text += Self.quotedIfNeeded(string)
        default: text += json.serialized
        }
    }

    private static func quotedIfNeeded(_ text: String) -> String {
        let plain =
            !text.isEmpty
            && text.unicodeScalars.allSatisfy {
                $0.isASCII && ($0.properties.isAlphabetic || $0.properties.numericType != nil || $0 == "_")
            }
        return plain
            ? text
            : "\"" + text.split(separator: "\"", omittingEmptySubsequences: false).joined(separator: "\\\"") + "\""
    }
}
