import ATSPolicy
import ATSPolicyArguments
import ArgumentParser
import TextFormats

/// `atsproxyctl check POLICY`: every finding with its key path and a fix, then what the policy allows.
struct CheckCommand: ParsableCommand, OutputCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Validate a policy: name every ignored or suspicious key, then say what the policy allows.",
        discussion: """
            POLICY is an app Info.plist (its NSAppTransportSecurity dictionary is read) or a plist whose root \
            is the ATS dictionary, in XML or binary form.

            --format sarif writes SARIF 2.1.0 for code scanning (GitHub's, or any CI that reads it): one \
            result per finding at its file, line and column, with its key path and its fix.

            Exit status: 0 the policy loads (findings are printed); 1 with --strict when there are errors or \
            warnings; 2 the file is missing, unreadable or not a policy.

            Examples:
              atsproxyctl check MyApp/Info.plist
              atsproxyctl check --strict --os-profile ios26 MyApp/Info.plist
              atsproxyctl check --legacy-keys honor --json MyApp/Info.plist
              atsproxyctl check --format sarif MyApp/Info.plist > ats.sarif
              plutil -convert xml1 -o - MyApp.app/Info.plist | atsproxyctl check -
            """)

    @Argument(
        help:
            "The policy file (Info.plist or NSAppTransportSecurity dictionary, XML or binary); - reads standard input.")
    var policy: String

    /// How the findings are printed.
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json, sarif
    }

    @Option(help: "text, json (one object) or sarif (SARIF 2.1.0, for code scanning).")
    var format: Format?

    @Flag(help: "Print one JSON object instead of text (--format json).")
    var json = false

    @Flag(help: "Exit 1 when there are errors or warnings.")
    var strict = false

    @OptionGroup var options: PolicyOptions

    func validate() throws {
        if json, let format, format != .json { throw ValidationError("--json and --format \(format) disagree") }
    }

    /// The format asked for: --format, or --json, or text.
    private var chosen: Format { format ?? (json ? .json : .text) }

    func execute(_ output: Output) -> Int32 {
        let loaded: PolicyLoader.Loaded
        do {
            loaded = try PolicyLoader.load(path: policy, settings: options.settings())
        } catch {
            if chosen == .sarif { output.line(CheckSARIF.document(path: policy, error: error).serialized) }
            if chosen == .json {
                output.line(
                    JSONValue.object([
                        ("ok", false), ("file", .string(policy)),
                        (
                            "error",
                            .object([("code", .string(error.code.rawValue)), ("message", .string(error.description))])
                        ),
                        ("findings", .array([])), ("summary", .null),
                    ]).serialized)
            }
            output.error("atsproxyctl: error: \(error)")
            return ExitStatus.badInput
        }
        let findings = loaded.policy.findings.sorted(by: CheckCommand.order)
        let problems = findings.filter { $0.severity != .info }
        switch chosen {
        case .json: output.line(jsonReport(loaded, findings: findings, ok: problems.isEmpty).serialized)
        case .sarif: output.line(CheckSARIF.document(path: policy, findings: findings).serialized)
        case .text: printReport(loaded, findings: findings, to: output)
        }
        return strict && !problems.isEmpty ? ExitStatus.findings : ExitStatus.success
    }

    /// File order where lines are known, then severity.
    static func order(_ a: Finding, _ b: Finding) -> Bool {
        switch (a.location.line, b.location.line) {
        case (let x?, let y?) where x != y: return x < y
        case (.some, nil): return true
        case (nil, .some): return false
        default: return a.severity < b.severity
        }
    }

    private func jsonReport(_ loaded: PolicyLoader.Loaded, findings: [Finding], ok: Bool) -> JSONValue {
        .object([
            ("ok", .bool(ok)),
            ("file", .string(loaded.path)),
            ("format", .string(loaded.format.rawValue)),
            ("sha256", .string(loaded.sha256)),
            ("findings", .array(findings.map(\.json))),
            ("summary", loaded.policy.summary.json),
        ])
    }

    private func printReport(_ loaded: PolicyLoader.Loaded, findings: [Finding], to output: Output) {
        let counts = Finding.Severity.allCases.compactMap { severity -> String? in
            let count = findings.filter { $0.severity == severity }.count
            guard count > 0 else { return nil }
            let noun = severity == .info ? "note" : severity.rawValue
            return "\(count) \(noun)\(count == 1 ? "" : "s")"
        }
        let kind = loaded.policy.rootKind == .infoPlist ? "app Info.plist" : "ATS dictionary"
        output.line(
            "\(loaded.path): \(kind), \(loaded.format.rawValue) plist: "
                + (counts.isEmpty ? "no findings" : counts.joined(separator: ", ")))
        for finding in findings {
            var position = loaded.path
            if let line = finding.location.line {
                position += ":\(line)"
                if let column = finding.location.column { position += ":\(column)" }
            } else if let offset = finding.location.byteOffset {
                position += " (byte \(offset))"
            }
            let label = finding.severity == .info ? "note" : finding.severity.rawValue
            output.line("")
            output.line("\(position): \(label): \(finding.path)")
            output.line("    \(finding.message)")
            if let fix = finding.fix { output.line("    fix: \(fix)") }
        }
        output.line("")
        output.line("What this policy allows:")
        for line in loaded.policy.summary.lines { output.line("  " + line) }
    }
}
