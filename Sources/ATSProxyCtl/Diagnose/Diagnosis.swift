import ATSPolicy
import TLSInspection

/// The URL `diagnose` loads, as given, and as loaded.
struct DiagnoseTarget {
    /// What is loaded: an `http://` URL becomes `https://`, as nscurl does, unless `--cleartext`.
    var load: LoadURL
    /// The URL as the user typed it (host case, path and query kept), with the scheme put in front of
    /// a bare host: what the header says was loaded, so the user recognises it.
    var given: String
    /// Whether an `http://` URL was rewritten to `https://`.
    var rewritten: Bool

    init(_ text: String, cleartext: Bool) throws(LoadURL.Failure) {
        given = text.contains("://") ? text : "https://\(text)"
        load = try LoadURL(parsing: given)
        rewritten = load.scheme == .http && !cleartext
        if rewritten {
            load.scheme = .https
            if load.explicitPort == 80 { load.explicitPort = nil }
        }
    }

    var scheme: URLScheme { load.scheme }
    var host: HostIdentity { load.host }
    var port: UInt16 { load.port }
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
            ? ServerSurvey.run(
                prober: prober, host: target.host.description, port: target.port, serverName: runner.serverName)
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
        /// Verdict probes and responses already had, shared by the tests and their hops: the server
        /// gives the same answer to the same ClientHello and request.
        private var hopProbes: [String: UpstreamProbeResult] = [:]
        private var responses: [String: Result<[UInt8], LoadFailure>] = [:]

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
                return DiagnosticResult(
                    test: test, verdict: nil, failure: "the test's ATS dictionary is invalid: \(error)")
            }
            let requirements = policy.requirements(for: target.host, scheme: target.scheme)
            guard target.scheme == .https else {
                return loading(
                    DiagnosticResult(test: test, verdict: policy.verdict(for: requirements, observed: nil)), policy)
            }
            let profile = ClientProfile.ats(for: requirements)
            let key = HopFetcher.probeKey(host: target.host.description, port: target.port, profile: profile)
            let probe =
                hopProbes[key]
                ?? prober.verdictProbe(host: target.host.description, port: target.port, requirements: requirements)
            hopProbes[key] = probe
            if let reason = probe.cleartextUpstream {
                return DiagnosticResult(
                    test: test, verdict: nil, failure: "the server does not speak TLS on port \(target.port): \(reason)"
                )
            }
            guard let observed = probe.observed else {
                switch probe.upstreamFailure {
                case .handshake(let reason)?:
                    return DiagnosticResult(
                        test: test, verdict: nil,
                        failure:
                            "the TLS handshake failed, even offering every version and suite OpenSSL speaks: \(reason)")
                case let failure?: throw failure
                case nil: throw ProbeFailure.handshake(reason: "no handshake completed")
                }
            }
            return loading(
                DiagnosticResult(
                    test: test,
                    verdict: policy.verdict(
                        for: requirements, observed: observed, atsHandshakeFailure: probe.atsHandshakeFailure),
                    // The permissive probe's group is not one the app's handshake would have used.
                    keyExchangeGroup: probe.atsHandshakeFailure == nil ? observed.keyExchangeGroup : nil),
                policy)
        }

        /// Once the first handshake passed, loads the URL as nscurl does (a request, redirects followed,
        /// each hop judged by the test's dictionary), sharing probes and responses between tests.
        private mutating func loading(_ result: DiagnosticResult, _ policy: TransportSecurityPolicy) -> DiagnosticResult
        {
            guard result.passed else { return result }
            var fetcher = HopFetcher(prober: prober, policy: policy, probes: hopProbes, responses: responses)
            let load = RedirectingLoad.run(target.load) { fetcher.fetch($0) }
            hopProbes = fetcher.probes
            responses = fetcher.responses
            var loaded = result
            let finalStatus: Int? = if case .loaded(let status) = load.outcome { status } else { nil }
            loaded.load = DiagnosticLoad(
                hops: load.hops.map { hop in
                    DiagnosticLoad.Hop(
                        url: hop.url.description, host: hop.url.host, status: hop.status, location: hop.location,
                        verdict: hop.verdict, failure: hop.failure)
                },
                finalStatus: finalStatus)
            return loaded
        }
    }
}
