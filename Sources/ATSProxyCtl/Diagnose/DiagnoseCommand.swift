import ATSPolicy
import ATSPolicyArguments
import ArgumentParser
import Glibc
import POSIX
import ProxyCore
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

            With --chain, no server: the certificates in the files (PEM or DER, leaf first, in one bundle or \
            several files) are judged as an iPhone judges them at --date, for --host, under the app's --policy \
            (its exceptions and NSPinnedDomains; the ATS defaults without it), through the same path building \
            and rules as the proxy's verdicts. Each violation is named with Apple's error codes and the \
            Info.plist key or the server change that fixes it. Exit status: 0 compliant, 1 violations, 2 bad input.

            With --urls, every URL of a file (one a line; blank lines and # comments skipped; - for standard \
            input) is diagnosed, --jobs at a time, into one table (or one JSON document with --json); the exit \
            status is the worst of them. With --os-profile apple-system the rules are those Apple announced for \
            the OS's own services (MDM, enrollment, app installation, software updates; support article \
            126655): TLS 1.2 or later, ATS suites and certificates, no Info.plist exceptions.

            Examples:
              atsproxyctl diagnose https://api.example.com/
              atsproxyctl diagnose --urls endpoints.txt --os-profile apple-system
              atsproxyctl diagnose --verbose --os-profile ios26 https://legacy.example.com/
              atsproxyctl diagnose --ca-file dev-root.pem --json https://staging.test/
              atsproxyctl diagnose --chain renewed.pem --date 2027-01-15
              atsproxyctl diagnose --chain leaf.der intermediate.der --ca-file corp-root.pem --host api.corp.test
              atsproxyctl diagnose --chain pasted.pem --policy MyApp/Info.plist --json
            """)

    @Argument(help: "The URL to load: https://host[:port]/ or http://host[:port]/ (a bare host means https).")
    var url: String?

    @Option(
        name: .customLong("chain"), parsing: .upToNextOption,
        help: "Judge these certificate files (PEM or DER, leaf first) without a server, instead of a URL.")
    var chainFiles: [String] = []

    @Option(
        name: .customLong("urls"),
        help: "Diagnose every URL of this file (one a line; - for standard input), instead of one URL.")
    var urlsFile: String?

    @Option(name: .customLong("jobs"), help: "With --urls: how many URLs are diagnosed at a time (1-16).")
    var jobs: Int = 4

    @Option(
        name: .customLong("host"), help: "With --chain: the host to judge for (default: the leaf's first DNS name).")
    var host: String?

    @Option(
        name: .customLong("date"), help: "With --chain: the moment to judge at, RFC 3339 or YYYY-MM-DD (default: now).")
    var date: String?

    @Option(
        name: .customLong("policy"), help: "With --chain: the app's Info.plist or policy (default: the ATS defaults).")
    var policy: String?

    @Option(
        name: .customLong("ca-file"),
        help: "Extra trust anchors (PEM or DER), treated as user-installed roots (repeatable).")
    var caFiles: [String] = []

    @Option(
        name: .customLong("app-anchor"),
        help: "Anchors the app sets itself with SecTrustSetAnchorCertificates (PEM or DER; repeatable).")
    var appAnchorFiles: [String] = []

    @Option(
        name: .customLong("system-anchor"),
        help: "Treat these certificates as system roots, as if in the OS store (PEM or DER; repeatable).")
    var systemAnchorFiles: [String] = []

    @Option(name: .customLong("system-roots"), help: "Trust the OS store as Apple's system roots: on or off.")
    var systemRoots: OnOff = .on

    @Option(
        name: .customLong("ct-log-list"),
        help:
            "Apple's CT log list (JSON): verify SCT signatures and apply log states and operators (default: count SCTs)."
    )
    var ctLogListFile: String?

    @Option(
        name: .customLong("aia-fetch"),
        help: "Fetch an intermediate the server left out from its CA Issuers URL, as iOS does: on or off.")
    var aiaFetch: OnOff = .on

    @Option(name: .customLong("hosts-file"), help: "Names to addresses in /etc/hosts format, consulted before DNS.")
    var hostsFile: String?

    @Option(help: "Seconds allowed for a connection to open, and for a verdict's handshakes (as the proxy's timeouts).")
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
        guard (1...16).contains(jobs) else { throw ValidationError("--jobs must be 1 to 16") }
        let modes = [url != nil, !chainFiles.isEmpty, urlsFile != nil].count { $0 }
        guard modes <= 1 else { throw ValidationError("give one of a URL, --urls FILE and --chain FILE...") }
        if urlsFile != nil {
            for (value, flag) in [(host, "--host"), (date, "--date"), (policy, "--policy")] where value != nil {
                throw ValidationError("\(flag) goes with --chain; each URL names its own host and is loaded now")
            }
            return
        }
        switch (url, chainFiles.isEmpty) {
        case (nil, true):
            throw ValidationError(
                "give a URL to load, --urls FILE for many, or --chain FILE... to judge without a server")
        case (_?, false): throw ValidationError("give one of a URL, --urls FILE and --chain FILE...")
        case (_?, true):
            for (value, flag) in [(host, "--host"), (date, "--date"), (policy, "--policy")] where value != nil {
                throw ValidationError("\(flag) goes with --chain; a URL names its own host and is loaded now")
            }
        case (nil, false):
            if let date, DateFormat.parseRFC3339(date) == nil {
                throw ValidationError(
                    "--date \(date): not an RFC 3339 time (2026-11-27T12:00:00Z) or a date (2026-11-27)")
            }
        }
    }

    private func anchors() throws -> TrustAnchors {
        try TrustAnchors.loading(
            caFiles: caFiles, appAnchorFiles: appAnchorFiles, systemAnchorFiles: systemAnchorFiles,
            systemRoots: systemRoots.isOn,
            ctLogList: try ctLogListFile.map { path throws(CTLogList.ReadError) in
                try CTLogList(path: path)
            })
    }

    /// What every probe of this run shares: the TLS contexts (``ProbeService``, made against the
    /// anchors) and the limits, `--timeout` being both the connect and the handshake timeout.
    private func probeSetup() throws -> (ProbeService, ProbeLimits) {
        let hosts = try hostsFile.map { path throws(HostsTable.ReadError) in try HostsTable.load(path: path) }
        let limits = ProbeLimits(
            connectTimeout: .seconds(timeout), handshakeTimeout: .seconds(timeout), hosts: hosts,
            fetchesIntermediates: aiaFetch.isOn)
        return (ProbeService(anchors: try anchors()), limits)
    }

    func execute(_ output: Output) -> Int32 {
        if let urlsFile { return executeList(urlsFile, output) }
        guard let url else { return executeChain(output) }
        let target: DiagnoseTarget
        do {
            target = try DiagnoseTarget(url, cleartext: cleartext)
        } catch {
            output.error("atsproxyctl: error: URL \"\(url)\": \(error)")
            return ExitStatus.badInput
        }
        let setup: (ProbeService, ProbeLimits)
        do {
            setup = try probeSetup()
        } catch {
            output.error("atsproxyctl: error: \(error)")
            return ExitStatus.badInput
        }
        let diagnosis: Diagnosis
        do {
            let probes = try ProbeLoop.starting(service: setup.0, limits: setup.1)
            diagnosis = try Diagnosis.run(target, settings: options.settings(), probes: probes, surveying: !noSurvey)
        } catch {
            output.error("atsproxyctl: error: \(target.url): \(error)")
            return ExitStatus.unreachable
        }
        if json {
            output.line(diagnosis.json.serialized)
        } else {
            DiagnosisText(diagnosis: diagnosis, verbose: verbose).write(to: output)
            if let hint = trustHint(diagnosis) { output.line(hint) }
        }
        return diagnosis.conclusion.kind == .defaultsPass ? ExitStatus.success : ExitStatus.findings
    }

    /// What to try when the chain led to no trusted root and no root of the user's own was given.
    private func trustHint(_ diagnosis: Diagnosis) -> String? {
        guard diagnosis.foundUntrustedChain, caFiles.isEmpty, appAnchorFiles.isEmpty else { return nil }
        return "Hint: the chain leads to no root an iPhone trusts. If it is your own CA (a staging or corporate root "
            + "the devices install), pass it: atsproxyctl diagnose --ca-file ROOT.pem \(diagnosis.target.given) "
            + "(atsproxy takes the same --ca-file, and make run CA_FILE=ROOT.pem)."
    }

    /// `--urls`: every URL of the file, into one table or document.
    private func executeList(_ file: String, _ output: Output) -> Int32 {
        let text: String
        do {
            text = String(decoding: try Self.readList(file), as: UTF8.self)
        } catch {
            output.error("atsproxyctl: error: --urls: \(error)")
            return ExitStatus.badInput
        }
        let entries = URLListDiagnosis.entries(text)
        guard !entries.isEmpty else {
            output.error("atsproxyctl: error: --urls \(file): no URL in it (one a line; # starts a comment)")
            return ExitStatus.badInput
        }
        let setup: (ProbeService, ProbeLimits)
        do {
            setup = try probeSetup()
        } catch {
            output.error("atsproxyctl: error: \(error)")
            return ExitStatus.badInput
        }
        let list = URLListDiagnosis.run(
            entries, source: file == "-" ? "(standard input)" : file, jobs: jobs, cleartext: cleartext,
            surveying: !noSurvey, settings: options.settings(), service: setup.0, limits: setup.1)
        if json {
            output.line(list.json.serialized)
        } else {
            list.write(to: output)
        }
        for row in list.rows where row.status == ExitStatus.badInput {
            output.error("atsproxyctl: error: \(row.summary)")
        }
        return list.status
    }

    /// The list's bytes: a regular file, or standard input for `-`; at most 16 MiB.
    private static func readList(_ file: String) throws -> [UInt8] {
        guard file == "-" else { return try FileContents.read(file, maximumSize: 16 << 20).bytes }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            guard bytes.count <= 16 << 20 else {
                throw ChainDiagnosis.InputError(description: "(standard input): more than 16 MiB: not a list of URLs")
            }
            let count = buffer.withUnsafeMutableBytes { Glibc.read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        return bytes
    }

    /// `--chain`: the files judged without a server.
    private func executeChain(_ output: Output) -> Int32 {
        let settings = options.settings()
        let chain: ChainDiagnosis
        do {
            let (service, limits) = try probeSetup()
            let policyValue: TransportSecurityPolicy
            if let policy {
                policyValue = try PolicyLoader.load(path: policy, settings: settings).policy
            } else {
                policyValue = TransportSecurityPolicy(settings: settings)
            }
            let moment = date.flatMap(DateFormat.parseRFC3339) ?? Int64(time(nil))
            chain = try ChainDiagnosis.run(
                files: chainFiles, host: host, date: moment,
                probes: try ProbeLoop.starting(service: service, limits: limits),
                policy: policyValue,
                policyFile: policy, settings: settings)
        } catch {
            output.error("atsproxyctl: error: \(error)")
            return ExitStatus.badInput
        }
        if json {
            output.line(chain.json.serialized)
        } else {
            chain.write(to: output, verbose: verbose)
        }
        return chain.verdict.isCompliant ? ExitStatus.success : ExitStatus.findings
    }
}
