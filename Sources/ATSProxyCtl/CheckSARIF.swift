import ATSPolicy
import ControlProtocol
import TextFormats

/// `check --format sarif`: the findings as a SARIF 2.1.0 log, the format GitHub code scanning and
/// other CI systems annotate source files from. One result per finding, at the policy file's line
/// and column (or byte offset, for a binary plist), with the key path; the fix goes in the message,
/// since SARIF's own `fixes` need exact text replacements, which `check` does not compute.
enum CheckSARIF {
    static let schema = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

    /// The log for the findings of the policy at `path` (as given on the command line: a relative
    /// path stays relative, so code scanning finds the file in the repository).
    static func document(path: String, findings: [Finding]) -> JSONValue {
        let codes = findings.map(\.code).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
        let rules = codes.map { code in
            JSONValue.object([
                ("id", .string(code)),
                ("name", .string(ruleName(code))),
                ("shortDescription", .object([("text", .string(code.split(separator: "_").joined(separator: " ")))])),
            ])
        }
        let results = findings.map { finding in
            result(finding, path: path, ruleIndex: codes.firstIndex(of: finding.code) ?? 0)
        }
        return log(rules: rules, results: results)
    }

    /// The log for a policy that could not be read at all: one error result naming the file.
    static func document(path: String, error: PolicyLoadError) -> JSONValue {
        let rule = JSONValue.object([
            ("id", .string(error.code.rawValue)),
            ("name", .string(ruleName(error.code.rawValue))),
            ("shortDescription", .object([("text", .string("the policy cannot be read"))])),
        ])
        let result = JSONValue.object([
            ("ruleId", .string(error.code.rawValue)),
            ("ruleIndex", .int(0)),
            ("level", .string("error")),
            ("message", .object([("text", .string(error.description))])),
            ("locations", .array([.object([("physicalLocation", .object([("artifactLocation", artifact(path))]))])])),
        ])
        return log(rules: [rule], results: [result])
    }

    private static func log(rules: [JSONValue], results: [JSONValue]) -> JSONValue {
        let driver = JSONValue.object([
            ("name", "atsproxyctl"),
            ("fullName", "atsproxyctl check: App Transport Security policy findings"),
            ("version", .string(ATSProxyVersion.current)),
            ("semanticVersion", .string(ATSProxyVersion.current)),
            ("rules", .array(rules)),
        ])
        return .object([
            ("$schema", .string(schema)),
            ("version", "2.1.0"),
            (
                "runs",
                .array([
                    .object([
                        ("tool", .object([("driver", driver)])),
                        ("columnKind", "unicodeCodePoints"),
                        ("results", .array(results)),
                    ])
                ])
            ),
        ])
    }

    private static func result(_ finding: Finding, path: String, ruleIndex: Int) -> JSONValue {
        var region: [(String, JSONValue)] = []
        if let line = finding.location.line {
            region.append(("startLine", .int(Int64(line))))
            if let column = finding.location.column { region.append(("startColumn", .int(Int64(column)))) }
        } else if let offset = finding.location.byteOffset {
            region.append(("byteOffset", .int(Int64(offset))))
        }
        var physical: [(String, JSONValue)] = [("artifactLocation", artifact(path))]
        if !region.isEmpty { physical.append(("region", .object(region))) }
        let text = finding.message + (finding.fix.map { ". Fix: \($0)" } ?? "")
        var properties: [(String, JSONValue)] = [("keyPath", .string(finding.path.description))]
        if let fix = finding.fix { properties.append(("fix", .string(fix))) }
        return .object([
            ("ruleId", .string(finding.code)),
            ("ruleIndex", .int(Int64(ruleIndex))),
            ("level", .string(level(finding.severity))),
            ("message", .object([("text", .string(text))])),
            (
                "locations",
                .array([
                    .object([
                        ("physicalLocation", .object(physical)),
                        (
                            "logicalLocations",
                            .array([
                                .object([
                                    ("fullyQualifiedName", .string(finding.path.description)), ("kind", "member"),
                                ])
                            ])
                        ),
                    ])
                ])
            ),
            ("properties", .object(properties)),
        ])
    }

    private static func level(_ severity: Finding.Severity) -> String {
        switch severity {
        case .error: "error"
        case .warning: "warning"
        case .info: "note"
        }
    }

    /// `invalid_tls_version` → `InvalidTlsVersion`: SARIF's rule names are identifiers.
    private static func ruleName(_ code: String) -> String {
        code.split(separator: "_").map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }

    /// The file as a URI reference: its path with the characters a URI cannot hold escaped.
    private static func artifact(_ path: String) -> JSONValue {
        let name = path == "-" ? "stdin" : path
        var uri = ""
        for byte in name.utf8 {
            let allowed =
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || "/-._~".utf8.contains(byte)
            uri +=
                allowed
                ? String(UnicodeScalar(byte)) : "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
        }
        return .object([("uri", .string(uri))])
    }
}
