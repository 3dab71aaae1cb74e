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

            Exit status: 0 the report was printed (even with skipped lines); 2 a log or the policy is \
            missing or unreadable, or no line of the logs is a connection record.

            Examples:
              atsproxyctl report /var/log/atsproxy/atsproxy.log*
              atsproxyctl report --policy MyApp/Info.plist --json atsproxy.log
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

    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    @OptionGroup var options: PolicyOptions

    func validate() throws {
        guard !logs.isEmpty else { throw ValidationError("name at least one LOG file") }
    }

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
        if json {
            output.line(report.json(collection: collection, policyPath: loaded?.path).serialized)
        } else {
            ReportText(report: report, collection: collection, policyPath: loaded?.path).write(to: output)
        }
        return ExitStatus.success
    }
}
