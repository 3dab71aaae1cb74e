import ATSPolicy
import TLSInspection

/// The URL `diagnose` loads: scheme, host and port.
struct DiagnoseTarget {
    var scheme: URLScheme
    var host: HostIdentity
    var port: UInt16
    /// The URL as the user typed it (host case, path and query kept), with the scheme put in front of
    /// a bare host: what the header says was loaded, so the user recognises it.
    var given: String

    init(_ argument: HostArgument, given text: String) {
        scheme = argument.scheme
        host = argument.host
        port = argument.port ?? (argument.scheme == .https ? 443 : 80)
        given = text.contains("://") ? text : "\(argument.scheme.rawValue)://\(text)"
    }

    /// `https://host:port/`: the normalised form, for JSON and errors.
    var url: String { "\(scheme.rawValue)://\(host.urlForm):\(port)/" }
    /// The `NSExceptionDomains` key nscurl uses: the URL's host, no subdomains.
    var exceptionKey: String { host.description }
}

/// What `diagnose` found: each test's result in nscurl's order, the conclusion, and the server's facts.
struct Diagnosis {
    var target: DiagnoseTarget
    var settings: PolicySettings
    var results: [DiagnosticResult]
    var conclusion: DiagnosisConclusion
    /// The TLS facts; nil for an `http://` URL.
    var survey: ServerSurvey?

    /// Runs every test against the server, then the survey. Throws when the server cannot be reached
    /// at all: then no test says anything about ATS.
    static func run(_ target: DiagnoseTarget, settings: PolicySettings, prober: UpstreamProber, surveying: Bool = true)
        throws(ProbeFailure) -> Diagnosis
    {
        var runner = Runner(target: target, settings: settings, prober: prober)
        if target.scheme == .http { try prober.checkConnection(host: target.host.description, port: target.port) }
        var results: [DiagnosticResult] = []
        for test in DiagnosticPlan.tests(for: target.exceptionKey, on: settings.osProfile) {
            results.append(try runner.evaluate(test))
        }
        let survey =
            target.scheme == .https && surveying
            ? ServerSurvey.run(prober: prober, host: target.host.description, port: target.port, serverName: runner.serverName)
            : nil
        return Diagnosis(
            target: target, settings: settings, results: results,
            conclusion: DiagnosisConclusion(host: target.exceptionKey, results: results), survey: survey)
    }

    /// Evaluates tests one by one, sharing the probes of tests whose ATS client is the same (the
    /// TLSv1.2 test's client is the default's, for one): the server gives the same answer to the same
    /// ClientHello.
    private struct Runner {
        let target: DiagnoseTarget
        let settings: PolicySettings
        let prober: UpstreamProber
        private var probes: [ClientProfile: VerdictProbe] = [:]

        init(target: DiagnoseTarget, settings: PolicySettings, prober: UpstreamProber) {
            self.target = target
            self.settings = settings
            self.prober = prober
        }

        /// Apple's client sends no SNI for an IP literal.
        var serverName: String? { if case .name(let name) = target.host { name } else { nil } }

        mutating func evaluate(_ test: DiagnosticTest) throws(ProbeFailure) -> DiagnosticResult {
            let root = PropertyListNode(.dictionary(ordered: [(ATSKey.appTransportSecurity, test.atsDictionary)]))
            let policy: TransportSecurityPolicy
            do {
                policy = try TransportSecurityPolicy(root: root, settings: settings, file: test.name)
            } catch {
                // The plan's dictionaries are well-formed; say so plainly if one ever is not.
                return DiagnosticResult(test: test, verdict: nil, failure: "the test's ATS dictionary is invalid: \(error)")
            }
            let requirements = policy.requirements(for: target.host, scheme: target.scheme)
            guard target.scheme == .https else {
                return DiagnosticResult(test: test, verdict: policy.verdict(for: requirements, observed: nil))
            }
            let profile = ClientProfile.ats(for: requirements)
            let probe =
                probes[profile]
                ?? prober.verdictProbe(host: target.host.description, port: target.port, requirements: requirements)
            probes[profile] = probe
            if let reason = probe.cleartextUpstream {
                return DiagnosticResult(
                    test: test, verdict: nil, failure: "the server does not speak TLS on port \(target.port): \(reason)")
            }
            guard let observed = probe.observed else {
                switch probe.upstreamFailure {
                case .handshake(let reason)?:
                    return DiagnosticResult(
                        test: test, verdict: nil,
                        failure: "the TLS handshake failed, even offering every version and suite OpenSSL speaks: \(reason)")
                case let failure?: throw failure
                case nil: throw ProbeFailure.handshake(reason: "no handshake completed")
                }
            }
            return DiagnosticResult(
                test: test,
                verdict: policy.verdict(for: requirements, observed: observed, atsHandshakeFailure: probe.atsHandshakeFailure))
        }
    }
}
