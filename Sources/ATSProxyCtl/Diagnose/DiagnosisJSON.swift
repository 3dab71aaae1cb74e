import ATSPolicy
import TLSInspection
import TextFormats

extension Diagnosis {
    /// The `--json` contract: `tests` in order (`name`, `ats_dictionary`, `result`, `violations`),
    /// `minimal_exception`, `trust_failure`, `server`, and more.
    var json: JSONValue {
        .object([
            ("url", .string(target.url)),
            ("loaded_url", .string(target.load.description)),
            ("rewritten_to_https", .bool(target.rewritten)),
            // Why an http:// URL was judged in cleartext after all (its server has no TLS there).
            ("https_unavailable", target.httpsUnavailable.map(JSONValue.string) ?? .null),
            ("scheme", .string(target.scheme.rawValue)),
            ("host", .string(target.host.description)),
            ("port", .int(Int(target.port))),
            ("os_profile", .string(settings.osProfile.rawValue)),
            ("tests", .array(results.map(Self.testJSON))),
            ("minimal_exception", conclusion.minimalException?.json ?? .null),
            (
                "minimal_exception_plist",
                conclusion.entries(host: target.exceptionKey).isEmpty
                    ? .null
                    : .string(SuggestedException.infoPlistFragment(conclusion.entries(host: target.exceptionKey)))
            ),
            (
                "redirect_exceptions",
                .array(
                    conclusion.redirectExceptions.map { entry in
                        .object([("domain", .string(entry.domain)), ("exception", entry.exception.json)])
                    })
            ),
            ("whole_load_passes", conclusion.wholeLoadPasses.map { .bool($0) } ?? .null),
            ("trust_failure", .bool(conclusion.trustFailure)),
            (
                "conclusion",
                .object([
                    ("kind", .string(conclusion.kind.rawValue)),
                    ("text", .string(conclusion.headline)),
                    ("passing_test", .optional(conclusion.passingTest)),
                    ("redirect_url", .optional(conclusion.redirectURL)),
                    ("reasons", .strings(conclusion.reasons)),
                ])
            ),
            ("server", survey.map { serverJSON($0) } ?? .null),
            ("intermediate_fetches", .array(intermediateFetches.map(\.json))),
        ])
    }

    private static func testJSON(_ result: DiagnosticResult) -> JSONValue {
        let violations = result.verdict?.violations ?? []
        return .object([
            ("name", .string(result.test.name)),
            ("section", .string(result.test.section)),
            ("nscurl", .bool(result.test.isFromNSCurl)),
            ("ats_dictionary", result.test.atsDictionary.json),
            ("result", .string(result.passed ? "PASS" : "FAIL")),
            ("violations", .strings(violations.map(\.kind.name))),
            ("rule", result.verdict?.requirements.rule.json ?? .null),
            ("error", result.error?.json ?? (result.passed ? .null : AppleError(nsurl: -1200, ssl: nil).json)),
            ("failure", .optional(result.failure ?? result.load?.failure)),
            ("load", result.load.map(Self.loadJSON) ?? .null),
            ("tls_group", result.keyExchangeGroup?.json ?? .null),
            (
                "details",
                .array(
                    violations.map { violation in
                        .object([
                            ("name", .string(violation.kind.name)),
                            ("error", violation.error.json),
                            ("explanation", .string(violation.explanation)),
                            ("allowed_by", .optional(violation.allowedBy)),
                        ])
                    })
            ),
        ])
    }

    /// The load after the first handshake: `final_status` (null when it did not complete) and each hop.
    private static func loadJSON(_ load: DiagnosticLoad) -> JSONValue {
        .object([
            ("final_status", load.finalStatus.map { .int($0) } ?? .null),
            (
                "hops",
                .array(
                    load.hops.map { hop in
                        .object([
                            ("url", .string(hop.url)),
                            ("status", hop.status.map { .int($0) } ?? .null),
                            ("location", .optional(hop.location)),
                            ("violations", .strings(hop.verdict?.violations.map(\.kind.name) ?? [])),
                            ("error", hop.verdict?.error?.json ?? .null),
                            ("failure", .optional(hop.failure)),
                        ])
                    })
            ),
        ])
    }

    private func serverJSON(_ survey: ServerSurvey) -> JSONValue {
        .object([
            (
                "versions",
                .array(
                    survey.versions.map { support in
                        .object([
                            ("version", .string(support.version.plistName)),
                            ("accepted", .bool(support.isAccepted)),
                            (
                                "suites",
                                .array(
                                    support.suites.map { suite in
                                        .object([
                                            ("name", .string(suite.ianaName)),
                                            ("id", .string(suite.hexID)),
                                            (
                                                "ats",
                                                .string(SuiteStanding(suite, profile: settings.cipherProfile).rawValue)
                                            ),
                                        ])
                                    })
                            ),
                            ("refusal", .optional(support.refusal)),
                        ])
                    })
            ),
            ("trust", survey.trust.map { .string($0.name) } ?? .null),
            ("chain", .array(survey.chain.map(Self.certificateJSON))),
            (
                "pinned_domains",
                survey.pinnedDomains(host: target.exceptionKey).map {
                    JSONValue.object([(ATSKey.pinnedDomains, $0.json)])
                } ?? .null
            ),
        ])
    }

    private static func certificateJSON(_ certificate: ServerSurvey.Certificate) -> JSONValue {
        let facts = certificate.facts
        return .object(
            facts.summaryFields + [
                ("issuer", .string(certificate.issuer)),
                ("dns_names", .strings(facts.dnsNames)),
                ("ip_addresses", .strings(facts.ipAddresses.map(\.description))),
                ("spki_sha256", .optional(facts.spkiSHA256?.base64)),
                ("sent_by_server", .bool(certificate.sentByServer)),
                ("self_signed", .bool(facts.isSelfSigned)),
            ])
    }
}
