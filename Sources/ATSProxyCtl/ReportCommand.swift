import ATSPolicy
import ATSPolicyArguments
import ArgumentParser
import TextFormats
import TrafficReport

/// `atsproxyctl report LOG... [--policy CURRENT.plist] [--json]`: a day of the proxy's logs turned
/// into the narrowest NSAppTransportSecurity that lets the observed traffic through.
struct ReportCommand: ParsableCommand, OutputCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Propose the narrowest NSAppTransportSecurity that lets the logged traffic through.",
        discussion: """
            LOG is a JSON log of atsproxy (--log-file), plain or gzip-compressed as logrotate leaves it \
            (atsproxy.log.2.gz); give the current file and its rotated ones together. Per host, report counts \
            the connections and violations, and works out from the logged facts (the TLS version and suite \
            the server chose, http:// loads) which NSExceptionDomains keys the host needs: a TLS floor only \
            as low as it negotiated, forward secrecy off only for RSA key exchange, insecure HTTP only for \
            hosts loaded over http://, NSIncludesSubdomains only where several subdomains need the same \
            entry and none needs less. It never proposes NSAllowsArbitraryLoads. Hosts that fail for \
            reasons no ATS key changes (certificates, pins, suites no Apple client offers) are listed apart.

            With --policy, it also lists the policy's exceptions that the traffic never needed and the keys \
            the traffic needs that the policy lacks. Pass the settings the daemon ran with (--os-profile, \
            --local-network, …): the suggestion is for them.

            A line that is not valid JSON (the half-written last line of a log whose daemon crashed) or not \
            a connection record is skipped with a warning on standard error naming file:line:column.

            For CI: --fail-on violation exits 1 when any host's traffic would fail on the device, naming \
            each on standard error (without --policy, a host with a violation in the log, which the proxy \
            judged under the policy it ran with; with --policy, a host whose needs that policy lacks, or that \
            no key can fix). --format junit writes one JUnit test case per host, failed as --fail-on judges \
            it, for any CI system's test report.

            Exit status: 0 the report was printed (even with skipped lines); 1 with --fail-on violation when \
            a host would fail on the device; 2 a log or the policy is missing or unreadable, or no line of \
            the logs is a connection record.

            Examples:
              atsproxyctl report /var/log/atsproxy/atsproxy.log*
              atsproxyctl report --policy MyApp/Info.plist --json atsproxy.log
              atsproxyctl report --policy MyApp/Info.plist --format junit --fail-on violation atsproxy.log > ats.xml
            """)

    @Argument(help: "The proxy's JSON log files, plain or gzip (rotated ones too).")
    var logs: [String] = []

    @Option(
        help:
            "The app's current policy (Info.plist or NSAppTransportSecurity dictionary): list what it has unused and what it lacks."
    )
    var policy: String?

    @Option(name: .customLong("client"), help: "Which API the logged traffic stands for: urlsession, webkit or media.")
    var clientClass: ClientClass = .urlsession

    /// How the report is printed.
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json, junit
    }

    /// What makes the command fail (exit 1) for a CI gate.
    enum FailOn: String, ExpressibleByArgument, CaseIterable {
        /// A host whose traffic would fail on the device.
        case violation
    }

    @Option(help: "text, json (one object) or junit (a test case per host).")
    var format: Format?

    @Flag(help: "Print one JSON object instead of text (--format json).")
    var json = false

    @Option(name: .customLong("fail-on"), help: "violation: exit 1 when a host's traffic would fail on the device.")
    var failOn: FailOn?

    @OptionGroup var options: PolicyOptions

    func validate() throws {
        guard !logs.isEmpty else { throw ValidationError("name at least one LOG file") }
        if json, let format, format != .json { throw ValidationError("--json and --format \(format) disagree") }
    }

    /// The format asked for: --format, or --json, or text.
    private var chosen: Format { format ?? (json ? .json : .text) }

    func execute(_ output: Output) -> Int32 {
        let settings = options.settings(clientClass: clientClass)
        let collection: LogCollection
        do {
            collection = try LogCollection.read(paths: logs)
        } catch {
            output.error("atsproxyctl: error: \(error)")
            return ExitStatus.badInput
        }
        var loaded: PolicyLoader.Loaded?
        if let policy {
            do {
                loaded = try PolicyLoader.load(path: policy, settings: settings)
            } catch {
                output.error("atsproxyctl: error: --policy: \(error)")
                return ExitStatus.badInput
            }
        }
        warnAboutSkipped(collection.skipped, files: collection.files, to: output)
        if collection.records.isEmpty, !collection.skipped.isEmpty {
            output.error(
                "atsproxyctl: error: none of the \(collection.skipped.count) lines read is an atsproxy connection record"
            )
            return ExitStatus.badInput
        }
        let report = TrafficReport(
            traffic: collection.hostTraffic, settings: settings, clientClass: clientClass, currentPolicy: loaded?.policy
        )
        let failures = report.deviceFailures
        switch chosen {
        case .json: output.line(report.json(collection: collection, policyPath: loaded?.path).serialized)
        case .junit:
            output.write(ReportJUnit(report: report, clientClass: clientClass, deviceFailures: failures).document)
        case .text: ReportText(report: report, collection: collection, policyPath: loaded?.path).write(to: output)
        }
        guard failOn == .violation else { return ExitStatus.success }
        guard !failures.isEmpty else { return ExitStatus.success }
        let count = failures.count == 1 ? "1 host" : "\(failures.count) hosts"
        output.error("atsproxyctl: \(count) would fail on the device:")
        for failure in failures {
            output.error("  \(failure.host): " + failure.reasons.joined(separator: "; "))
        }
        return ExitStatus.findings
    }
}
