import ATSPolicy
import ATSPolicyArguments
import ArgumentParser
import LogRecord
import TextFormats
import TrafficReport

/// `atsproxyctl report LOG... [--policy CURRENT.plist] [--app NAME]... [--json]`: a day of the proxy's
/// logs turned into the narrowest NSAppTransportSecurity that lets the observed traffic through (one
/// app's, host's or device's with `--app`, `--host`, `--client`).
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

            On a phone, every app's traffic and the system's go through the proxy: --app keeps the lines \
            of one app, as its User-Agent names it (URLSession's default, MyApp/1.4.2 CFNetwork/… \
            Darwin/…, or Alamofire's), so the plist is that app's alone; --app other keeps browsers and \
            other agents. --host (an exact name or *.suffix) and --client (a device address) narrow it the \
            same way; each may be repeated, and the kinds given must all match. Lines that name no app \
            (a CONNECT without a User-Agent, in tunnel mode) are left out by --app, and counted.

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
            a host would fail on the device; 2 a log or the policy is missing or unreadable, an option is \
            malformed, or no line of the logs is a connection record.

            Examples:
              atsproxyctl report /var/log/atsproxy/atsproxy.log*
              atsproxyctl report --policy MyApp/Info.plist --json atsproxy.log
              atsproxyctl report --app MyApp --client 192.168.1.23 atsproxy.log
              atsproxyctl report --policy MyApp/Info.plist --format junit --fail-on violation atsproxy.log > ats.xml
            """)

    @Argument(help: "The proxy's JSON log files, plain or gzip (rotated ones too).")
    var logs: [String] = []

    @Option(
        help:
            "The app's current policy (Info.plist or NSAppTransportSecurity dictionary): list what it has unused and what it lacks."
    )
    var policy: String?

    @Option(
        name: .customLong("client-class"), help: "Which API the logged traffic stands for: urlsession, webkit or media."
    )
    var clientClass: ClientClass = .urlsession

    @OptionGroup var selecting: SelectionOptions

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
        guard let selection = selecting.selection(reportingTo: output) else { return ExitStatus.badInput }
        // --client named the API class before it named a device: say so rather than match no device.
        if let named = selecting.clients.first(where: { ClientClass(rawValue: $0) != nil }) {
            output.error(
                "atsproxyctl: error: --client \(named): --client names a device address; the API class is --client-class \(named)"
            )
            return ExitStatus.badInput
        }
        let read: LogCollection
        do {
            read = try LogCollection.read(paths: logs)
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
        warnAboutSkipped(read.skipped, files: read.files, to: output)
        if read.records.isEmpty, !read.skipped.isEmpty {
            output.error(
                "atsproxyctl: error: none of the \(read.skipped.count) lines read is an atsproxy connection record"
            )
            return ExitStatus.badInput
        }
        let collection = read.selecting(selection)
        if !selection.isEmpty { noteSelection(selection, read: read, selected: collection, to: output) }
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

    /// On standard error, so every format's output stays what it is: what was kept and, with --app,
    /// how many lines named no app at all.
    private func noteSelection(
        _ selection: TrafficSelection, read: LogCollection, selected: LogCollection, to output: Output
    ) {
        output.error(
            "atsproxyctl: note: \(selection): \(selected.records.count) of \(read.records.count) connection lines, "
                + "\(selected.requests.count) of \(read.requests.count) request lines")
        guard !selection.apps.isEmpty else { return }
        let unnamed = read.records.filter { $0.app == nil && $0.isLoad }.count
        if unnamed > 0 {
            output.error(
                "atsproxyctl: note: \(unnamed) connection line\(unnamed == 1 ? "" : "s") named no app (no User-Agent "
                    + "in the CONNECT or its requests) and \(unnamed == 1 ? "is" : "are") left out")
        }
        if selected.records.isEmpty {
            let seen = Set(read.records.compactMap { $0.app?.label }).sorted()
            output.error(
                "atsproxyctl: note: no connection line is of \(selection.apps.joined(separator: " or ")); "
                    + (seen.isEmpty ? "no line names an app" : "the apps seen: " + seen.joined(separator: ", ")))
        }
    }
}
