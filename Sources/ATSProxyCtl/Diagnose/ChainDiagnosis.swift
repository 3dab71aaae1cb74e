import ATSPolicy
import ProxyCore
import TLSInspection
import TextFormats

/// `diagnose --chain`: a certificate chain judged as an iPhone would judge it at a given date, with no
/// server. The path is built and the verdict made by the code the proxy's verdicts use
/// (``ChainValidation``, then the policy); there is no handshake, so only the certificate rules speak.
struct ChainDiagnosis {
    /// The same shape as a URL's diagnosis: nscurl's tests run over the chain, their conclusion, and
    /// the chain as `server.chain`.
    var diagnosis: Diagnosis
    var files: [String]
    var date: Int64
    /// The app's Info.plist (`--policy`), or nil for the ATS defaults.
    var policyFile: String?
    /// The verdict under that policy: what decides the exit status.
    var verdict: Verdict
    var missingIssuer: MissingIssuer?
    /// The SCTs as a log list judged them (`--ct-log-list`); nil: counted.
    var sctVerification: SCTVerification?

    /// Bad input for `--chain`, in words naming the file or option at fault.
    struct InputError: Error, CustomStringConvertible {
        var description: String
    }

    static func run(
        files: [String], host: String?, date: Int64, probes: ProbeLoop, policy: TransportSecurityPolicy,
        policyFile: String?, settings: PolicySettings
    ) throws(InputError) -> ChainDiagnosis {
        var presented: [X509Certificate] = []
        for file in files {
            do {
                presented += try CertificateFile.read(file, what: "chain file")
            } catch {
                throw InputError(description: "\(error)")
            }
        }
        let validation = probes.validate(presented, at: date)
        let observed = validation.observedConnection(evaluationTime: date)
        let target = try Self.target(host: host, leaf: observed.chain.first ?? presented[0].facts, files: files)
        let requirements = policy.requirements(for: target.host, scheme: .https)
        let verdict = policy.verdict(for: requirements, observed: observed)
        let results = DiagnosticPlan.tests(for: target.exceptionKey, on: settings.osProfile).map { test in
            Self.evaluate(test, host: target.host, observed: observed, settings: settings)
        }
        let sent = Set(presented.map(\.der))
        let survey = ServerSurvey(
            versions: [],
            chain: validation.path.map {
                ServerSurvey.Certificate(facts: $0.facts, issuer: $0.issuer, sentByServer: sent.contains($0.der))
            }, trust: validation.trust)
        let diagnosis = Diagnosis(
            target: target, settings: settings, results: results,
            conclusion: DiagnosisConclusion(host: target.exceptionKey, results: results), survey: survey,
            intermediateFetches: validation.fetches)
        return ChainDiagnosis(
            diagnosis: diagnosis, files: files, date: date, policyFile: policyFile, verdict: verdict,
            missingIssuer: validation.missingIssuer, sctVerification: observed.sctVerification)
    }

    /// The host the chain is judged for: `--host`, else the leaf's first DNS name (`www.` under a
    /// wildcard), else its first IP address.
    private static func target(host: String?, leaf: CertificateFacts, files: [String]) throws(InputError)
        -> DiagnoseTarget
    {
        // A wildcard first name stands for one host under it: www.
        let firstName = leaf.dnsNames.first.map { $0.hasPrefix("*.") ? "www" + $0.dropFirst() : $0 }
        guard let name = host ?? firstName ?? leaf.ipAddresses.first?.description else {
            throw InputError(
                description: "the leaf of \(files[0]) names no DNS name or IP address: give the host with --host")
        }
        let bracketed = name.contains(":") && !name.hasPrefix("[") ? "[\(name)]" : name
        do {
            return try DiagnoseTarget("https://\(bracketed)/", cleartext: false)
        } catch {
            throw InputError(description: "--host \(name): \(error)")
        }
    }

    private static func evaluate(
        _ test: DiagnosticTest, host: HostIdentity, observed: ObservedConnection, settings: PolicySettings
    ) -> DiagnosticResult {
        let root = PropertyListNode(.dictionary(ordered: [(ATSKey.appTransportSecurity, test.atsDictionary)]))
        do {
            let policy = try TransportSecurityPolicy(root: root, settings: settings, file: test.name)
            let requirements = policy.requirements(for: host, scheme: .https)
            return DiagnosticResult(test: test, verdict: policy.verdict(for: requirements, observed: observed))
        } catch {
            return DiagnosticResult(test: test, verdict: nil, failure: "the test's ATS dictionary is invalid: \(error)")
        }
    }

    var policyName: String { policyFile ?? "the ATS defaults (no NSAppTransportSecurity)" }

    /// A `diagnose --json` document, plus what only a chain has: `mode`, `date`, `chain_files`, `policy`
    /// (the verdict under the app's policy, each violation with the fix) and `missing_issuer`.
    var json: JSONValue {
        guard case .object(var fields) = diagnosis.json else { return diagnosis.json }
        fields.insert(("mode", .string("chain")), at: 0)
        fields += [
            ("date", .string(DateFormat.rfc3339(date))),
            ("chain_files", .strings(files)),
            (
                "policy",
                .object([
                    ("file", .optional(policyFile)),
                    ("result", .string(verdict.isCompliant ? "PASS" : "FAIL")),
                    ("rule", verdict.requirements.rule.json),
                    ("error", verdict.error?.json ?? .null),
                    ("violations", .strings(verdict.violations.map(\.kind.name))),
                    (
                        "details",
                        .array(
                            verdict.violations.map { violation in
                                .object([
                                    ("name", .string(violation.kind.name)),
                                    ("error", violation.error.json),
                                    ("explanation", .string(violation.explanation)),
                                    ("allowed_by", .optional(violation.allowedBy)),
                                    ("server_change", .string(violation.kind.serverChange)),
                                ])
                            })
                    ),
                ])
            ),
            ("ct", sctJSON),
            (
                "missing_issuer",
                missingIssuer.map { missing in
                    .object([
                        ("subject", .string(missing.subject)),
                        ("issuer", .string(missing.issuer)),
                        ("ca_issuers", .strings(missing.caIssuersURLs)),
                    ])
                } ?? .null
            ),
        ]
        return .object(fields)
    }

    /// `{"scts": "counted"}`, or `{"scts": "verified", "log_list", "each": [...]}`.
    private var sctJSON: JSONValue {
        guard let sctVerification else { return .object([("scts", .string("counted"))]) }
        return .object([
            ("scts", .string("verified")),
            ("log_list", .string(sctVerification.logList)),
            (
                "each",
                .array(
                    sctVerification.scts.map { sct in
                        .object([
                            ("source", .string(sct.source.rawValue)), ("log", .string(sct.log)),
                            ("operator", .optional(sct.logOperator)), ("approval", .string(sct.approval.rawValue)),
                            ("signature_valid", .bool(sct.signatureValid)), ("counts", .bool(sct.counts)),
                        ])
                    })
            ),
        ])
    }

    func write(to output: Output, verbose: Bool) {
        let target = diagnosis.target
        output.line("Judging a certificate chain for \(target.host) as of \(DateFormat.rfc3339(date))")
        output.line("No server: the chain as given in \(files.joined(separator: ", ")), leaf first.")
        output.line(
            "Judged as \(diagnosis.settings.osProfile.releases) judges a URLSession load: default trust, the ATS "
                + "certificate rules and pins; TLS versions and suites need a server (atsproxyctl diagnose URL).")
        output.line()
        output.line("Policy : \(policyName)")
        output.line("Result : " + (verdict.isCompliant ? "PASS" : "FAIL"))
        if let error = verdict.error { output.line("Error  : \(error.nsurlName) \(error.consoleForm)") }
        if !verdict.violations.isEmpty {
            output.line("Violations :")
            for violation in verdict.violations {
                output.line(
                    "  - \(violation.kind.name), \(violation.error.nsurlName) \(violation.error.consoleForm): "
                        + violation.explanation)
                if let key = violation.allowedBy { output.line("    Info.plist: \(key)") }
                output.line("    server: \(violation.kind.serverChange)")
            }
        }
        let text = DiagnosisText(diagnosis: diagnosis, verbose: verbose)
        output.line(String(repeating: "=", count: 80))
        if verbose {
            output.line("nscurl's tests over the same chain:")
            for result in diagnosis.results {
                output.line(
                    "  \(result.passed ? "PASS" : "FAIL")  \(result.test.name)"
                        + (result.verdict?.violations.isEmpty == false
                            ? "  (\(result.verdict!.violations.map(\.kind.name).joined(separator: ", ")))" : ""))
            }
        }
        text.writeConclusion(to: output)
        if let survey = diagnosis.survey {
            output.line(String(repeating: "=", count: 80))
            text.writeChain(survey, to: output)
        }
    }
}
