import ATSPolicy
import TLSInspection
import TextFormats

/// `diagnose`'s text: nscurl's layout for the tests (sections between lines of `=`, each test between
/// `---`), then the conclusion and the server's facts, which nscurl does not print.
struct DiagnosisText {
    let diagnosis: Diagnosis
    let verbose: Bool

    private static let rule = String(repeating: "=", count: 80)

    func write(to output: Output) {
        let target = diagnosis.target
        output.line("Starting ATS Diagnostics")
        output.line()
        output.line(
            "Configuring ATS Info.plist keys and displaying the result of \(target.scheme.rawValue.uppercased()) loads to \(target.load)."
        )
        if target.rewritten {
            output.line(
                "\(target.given) was given: like nscurl, atsproxyctl loads it over https://. "
                    + "Use --cleartext to load the http:// URL itself.")
        } else if let why = target.httpsUnavailable {
            output.line(
                "\(target.given) was given: the server \(why), so it is judged as the app loads it, in "
                    + "cleartext (nscurl would try https:// and report a failure no ATS key fixes).")
        }
        output.line(
            "A test will \"PASS\" if the connection meets every requirement of its ATS dictionary, as "
                + "\(diagnosis.settings.osProfile.releases) applies them to a URLSession load.")
        if !verbose { output.line("Use '--verbose' to see the ATS dictionaries used and each violation in words.") }
        var section: String?
        for result in diagnosis.results {
            if result.test.section != section {
                section = result.test.section
                output.line(Self.rule)
                output.line()
                output.line(result.test.section)
            }
            writeTest(result, to: output)
        }
        output.line(Self.rule)
        writeConclusion(to: output)
        if let survey = diagnosis.survey {
            output.line(Self.rule)
            writeFacts(survey, to: output)
        }
    }

    private func writeTest(_ result: DiagnosticResult, to output: Output) {
        output.line("---")
        output.line(result.test.name)
        if verbose {
            output.line("ATS Dictionary:")
            output.line(result.test.atsDictionary.foundationDescription)
        }
        output.line("Result : " + (result.passed ? "PASS" : "FAIL"))
        if let load = result.load { output.line("Load : " + load.hops.map(Self.describe).joined(separator: " -> ")) }
        let refused = result.load?.refusedRedirect
        let violations = result.verdict?.violations.nonEmpty ?? refused?.verdict?.violations ?? []
        if !violations.isEmpty {
            if verbose {
                output.line("Violations :")
                for violation in violations {
                    output.line(
                        "  - \(violation.kind.name), \(violation.error.nsurlName) \(violation.error.consoleForm): \(violation.explanation)"
                    )
                }
            } else {
                output.line(
                    "Violations : "
                        + violations.map { "\($0.kind.name) \($0.error.consoleForm)" }.joined(separator: ", "))
            }
        }
        if let failure = result.failure ?? result.load?.failure { output.line("Error : \(failure)") }
        // The group the test's handshake used: X25519MLKEM768 where both sides have ML-KEM.
        if let group = result.keyExchangeGroup { output.line("Key exchange : \(group.name) (\(group.codepoint))") }
        output.line("---")
        output.line()
    }

    /// `301 https://a.example/` for a hop that answered; `refused` or `failed` for one that did not.
    private static func describe(_ hop: DiagnosticLoad.Hop) -> String {
        if let status = hop.status { return "\(status) \(hop.url)" }
        return (hop.verdict.map { $0.isCompliant ? "failed" : "refused" } ?? "failed") + " \(hop.url)"
    }

    func writeConclusion(to output: Output) {
        let conclusion = diagnosis.conclusion
        output.line()
        output.line("Conclusion")
        output.line(conclusion.headline)
        if let test = conclusion.passingTest { output.line("The smallest passing test: \"\(test)\".") }
        if !conclusion.reasons.isEmpty {
            output.line(conclusion.kind == .exceptionNeeded ? "Why the ATS defaults fail:" : "Why:")
            for reason in conclusion.reasons { output.line("  - \(reason)") }
        }
        if let redirect = conclusion.redirectURL {
            output.line("Next: atsproxyctl diagnose \(redirect)")
        }
        let entries = conclusion.entries(host: diagnosis.target.exceptionKey)
        if !entries.isEmpty {
            output.line()
            output.line("Add to the app's Info.plist, inside its top-level <dict>:")
            output.line()
            output.write(SuggestedException.infoPlistFragment(entries))
        }
        output.line()
    }

    private func writeFacts(_ survey: ServerSurvey, to output: Output) {
        let target = diagnosis.target
        output.line()
        output.line("Server facts for \(target.host.urlForm):\(target.port)")
        output.line("TLS versions:")
        for support in survey.versions {
            let detail =
                support.isAccepted
                ? "yes, \(support.suites.count) suite\(support.suites.count == 1 ? "" : "s")"
                : "no" + (support.refusal.map { " (\($0))" } ?? "")
            output.line("  \(support.version.plistName)  \(detail)")
        }
        let accepted = survey.versions.filter(\.isAccepted)
        if !accepted.isEmpty {
            output.line("Suites the server accepts, in the order it chose them:")
            let width = accepted.flatMap(\.suites).map(\.ianaName.count).max() ?? 0
            for support in accepted {
                for (index, suite) in support.suites.enumerated() {
                    let version = index == 0 ? support.version.plistName : String(repeating: " ", count: 7)
                    let name = suite.ianaName.padding(to: width)
                    output.line(
                        "  \(version)  \(name)  \(SuiteStanding(suite, profile: diagnosis.settings.cipherProfile).words)"
                    )
                }
            }
        }
        writeChain(survey, to: output)
    }

    /// The chain with each certificate's facts, and the pins that would match it.
    func writeChain(_ survey: ServerSurvey, to output: Output) {
        let target = diagnosis.target
        guard !survey.chain.isEmpty else {
            output.line("No handshake completed: no certificate to show.")
            return
        }
        output.line("Certificate chain" + (survey.trust.map { ": \($0.words)" } ?? ""))
        for fetch in diagnosis.intermediateFetches {
            switch fetch.outcome {
            case .fetched(let subjects):
                output.line(
                    "  the server left out \(subjects.joined(separator: ", ")): fetched from \(fetch.url), as iOS does")
            case .failed(let reason):
                output.line("  the server left an intermediate out; fetching it from \(fetch.url) failed: \(reason)")
            }
        }
        for (index, certificate) in survey.chain.enumerated() {
            writeCertificate(certificate, index: index, to: output)
        }
        if let pins = survey.pinnedDomains(host: target.exceptionKey) {
            output.line()
            output.line("As NSPinnedDomains (the leaf's key, and every CA's), inside NSAppTransportSecurity:")
            output.line()
            output.write(PropertyListWriter.fragment(key: ATSKey.pinnedDomains, value: pins))
        }
    }

    private func writeCertificate(_ certificate: ServerSurvey.Certificate, index: Int, to output: Output) {
        let facts = certificate.facts
        let origin = certificate.sentByServer ? "sent by the server" : "from the trust store"
        output.line("  \(index)  \(facts.subject)  [\(origin)\(facts.isSelfSigned ? ", self-signed" : "")]")
        output.line("     issuer:     \(certificate.issuer)")
        output.line("     key:        \(facts.keyType.rawValue.uppercased()) \(facts.keyBits) bits")
        output.line("     signature:  \(facts.signatureAlgorithm)")
        let days = (facts.notAfter - facts.notBefore) / 86_400
        output.line(
            "     valid:      \(DateFormat.rfc3339(facts.notBefore)) to \(DateFormat.rfc3339(facts.notAfter)) (\(days) days)"
        )
        let names = facts.dnsNames.map { "DNS:\($0)" } + facts.ipAddresses.map { "IP:\($0)" }
        if !names.isEmpty { output.line("     SANs:       \(names.joined(separator: ", "))") }
        if let spki = facts.spkiSHA256 { output.line("     SPKI-SHA256-BASE64: \(spki.base64)") }
    }
}

extension AppleError {
    /// `-1200 [3:-9836]`, as Apple's console logs a failed load ("error code: -1200 [3:-9836]"; 3 is
    /// the SSL error domain).
    var consoleForm: String { ssl.map { "\(nsurl) [3:\($0)]" } ?? "\(nsurl)" }
}

extension String {
    /// Pads with spaces to `width` characters, for table columns.
    func padding(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}

extension Array {
    /// Nil when empty: for `a.nonEmpty ?? b`.
    var nonEmpty: Self? { isEmpty ? nil : self }
}
