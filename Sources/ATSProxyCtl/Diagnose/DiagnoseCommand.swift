import ATSPolicy
import ATSPolicyArguments
import ArgumentParser
import TLSInspection
import TextFormats

/// `atsproxyctl diagnose URL`: nscurl's ATS diagnostics, on Linux, with a conclusion.
struct DiagnoseCommand: ParsableCommand, OutputCommand {
    static let configuration = CommandConfiguration(
        commandName: "diagnose",
        abstract:
            "Load a URL under each ATS dictionary nscurl --ats-diagnostics tries, and name the smallest exception that passes.",
        discussion: """
            Real handshakes against the URL's host, one per ATS dictionary, in nscurl's order (ATS defaults; \
            allow all loads; minimum TLS 1.3 (1.2 on ios9, which had no TLS 1.3) down to 1.0; forward secrecy off; forward secrecy off with insecure \
            HTTP; each TLS version with forward secrecy off, then also with insecure HTTP), then atsproxy's own \
            insecure-HTTP tests. Then the conclusion: the smallest NSExceptionDomains entry that passes, as a \
            ready-to-paste Info.plist fragment, or why no ATS setting helps. Then the server's facts: TLS versions \
            and suites it accepts, and its chain with SPKI-SHA256-BASE64 pins.

            Exit status: 0 the ATS defaults pass; 1 the server needs an exception, or no ATS setting helps; \
            2 a malformed URL, option or file; 3 the server could not be reached.

            Examples:
              atsproxyctl diagnose https://api.example.com/
              atsproxyctl diagnose --verbose --os-profile ios26 https://legacy.example.com/
              atsproxyctl diagnose --ca-file dev-root.pem --json https://staging.test/
            """)

    @Argument(help: "The URL to load: https://host[:port]/ or http://host[:port]/ (a bare host means https).")
    var url: String

    @Option(
        name: .customLong("ca-file"), help: "Extra trust anchors (PEM), treated as user-installed roots (repeatable).")
    var caFiles: [String] = []

    @Option(name: .customLong("system-roots"), help: "Trust the OS store as Apple's system roots: on or off.")
    var systemRoots: OnOff = .on

    @Option(name: .customLong("hosts-file"), help: "Names to addresses in /etc/hosts format, consulted before DNS.")
    var hostsFile: String?

    @Option(help: "Seconds allowed for each connection and handshake.")
    var timeout: Int = 10

    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    @Flag(help: "Show each test's ATS dictionary and every violation in words.")
    var verbose = false

    @Flag(name: .customLong("no-survey"), help: "Skip the server facts (the version and suite handshakes).")
    var noSurvey = false

    @Flag(
        help:
            "Load an http:// URL as given, in cleartext. Without it, an http:// URL is loaded over https://, as nscurl does."
    )
    var cleartext = false

    @OptionGroup var options: PolicyOptions

    func validate() throws {
        guard (1...300).contains(timeout) else { throw ValidationError("--timeout must be 1 to 300 seconds") }
    }

    func execute(_ output: Output) -> Int32 {
        let target: DiagnoseTarget
        do {
            target = try DiagnoseTarget(url, cleartext: cleartext)
        } catch {
            output.error("atsproxyctl: error: URL \"\(url)\": \(error)")
            return ExitStatus.badInput
        }
        let prober: UpstreamProber
        do {
            let anchors = try TrustAnchors.loading(caFiles: caFiles, systemRoots: systemRoots.isOn)
            let hosts = try hostsFile.map { path throws(HostsTable.ReadError) in try HostsTable.load(path: path) }
            prober = UpstreamProber(anchors: anchors, hosts: hosts, timeout: .seconds(timeout))
        } catch {
            output.error("atsproxyctl: error: \(error)")
            return ExitStatus.badInput
        }
        let diagnosis: Diagnosis
        do {
            diagnosis = try Diagnosis.run(target, settings: options.settings(), prober: prober, surveying: !noSurvey)
        } catch {
            output.error("atsproxyctl: error: \(target.url): \(error)")
            return ExitStatus.unreachable
        }
        if json {
            output.line(diagnosis.json.serialized)
        } else {
            DiagnosisText(diagnosis: diagnosis, verbose: verbose).write(to: output)
        }
        return diagnosis.conclusion.kind == .defaultsPass ? ExitStatus.success : ExitStatus.findings
    }
}
