import ATSPolicy
import ProxyCore
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
    /// Why an `http://` URL given was judged as given, in cleartext, after all: its server speaks no
    /// TLS where https:// goes, or cannot be reached there. The app loads it in cleartext, so that
    /// is the load that needs an exception.
    var httpsUnavailable: String?

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
    /// The intermediates fetched because the server left them out (each URL once).
    var intermediateFetches: [IntermediateFetch] = []

    /// Runs every test against the server, then the survey, with the proxy's probes in `probes`'
    /// loop. Throws when the server cannot be reached at all: then no test says anything about ATS.
    static func run(_ target: DiagnoseTarget, settings: PolicySettings, probes: ProbeLoop, surveying: Bool = true)
        throws(ProbeFailure) -> Diagnosis
    {
        guard target.rewritten else {
            return try runOnce(target, settings: settings, probes: probes, surveying: surveying)
        }
        // An http:// URL goes over https:// first, as nscurl loads it. A server that speaks no TLS
        // there (or is not there) is judged as the app loads the URL: in cleartext, so that the
        // conclusion names the insecure-HTTP exception the app needs rather than "no setting helps".
        let why: String
        do throws(ProbeFailure) {
            let upgraded = try runOnce(target, settings: settings, probes: probes, surveying: surveying)
            guard let reason = upgraded.httpsSpeaksNoTLS else { return upgraded }
            why = reason
        } catch {
            why = "cannot be reached over https:// (\(error))"
        }
        var asGiven: DiagnoseTarget
        do {
            asGiven = try DiagnoseTarget(target.given, cleartext: true)
        } catch {
            throw ProbeFailure.handshake(reason: "\(target.given): \(error)")
        }
        asGiven.httpsUnavailable = why
        return try runOnce(asGiven, settings: settings, probes: probes, surveying: surveying)
    }

    /// Why every test's https:// load found no TLS at the URL's port, when that is so.
    var httpsSpeaksNoTLS: String? {
        guard target.scheme == .https, !results.isEmpty,
            results.allSatisfy({ $0.failure?.hasPrefix(Self.noTLSPrefix) == true })
        else { return nil }
        return "speaks no TLS on port \(target.port)"
    }

    static let noTLSPrefix = "the server does not speak TLS on port "

    /// Whether a test found the chain leads to no trusted root: a private CA's server, most often,
    /// which `--ca-file` (the root a device installed) answers.
    var foundUntrustedChain: Bool {
        results.contains { $0.verdict?.violations.contains { $0.kind == .untrustedChain } == true }
    }

    private static func runOnce(
        _ target: DiagnoseTarget, settings: PolicySettings, probes: ProbeLoop, surveying: Bool
    ) throws(ProbeFailure) -> Diagnosis {
        var runner = Runner(target: target, settings: settings, probes: probes)
        if target.scheme == .http { try probes.checkConnection(host: target.host.description, port: target.port) }
        var results: [DiagnosticResult] = []
        for test in DiagnosticPlan.tests(for: target.exceptionKey, on: settings.osProfile) {
            results.append(try runner.evaluate(test))
        }
        let survey =
            target.scheme == .https && surveying
            ? ServerSurvey.run(
                probes: probes, host: target.host.description, port: target.port, serverName: runner.serverName)
            : nil
        var conclusion = DiagnosisConclusion(host: target.exceptionKey, results: results)
        if !settings.osProfile.honoursInfoPlist, conclusion.kind != .defaultsPass {
            // No entry exists to propose: the OS's own services read no Info.plist.
            conclusion.kind = .noSettingHelps
            conclusion.minimalException = nil
            conclusion.passingTest = nil
            conclusion.redirectExceptions = []
            conclusion.headline =
                "\(target.exceptionKey) fails what \(settings.osProfile.releases) require (TLS 1.2 or later, ATS cipher "
                + "suites, ATS-compliant certificates), and they take no Info.plist exception: the server must change."
        } else if !conclusion.redirectExceptions.isEmpty {
            try runner.checkWholeLoad(&conclusion)
        }
        return Diagnosis(
            target: target, settings: settings, results: results, conclusion: conclusion, survey: survey,
            intermediateFetches: runner.intermediateFetches)
    }

    /// Evaluates tests one by one, sharing the probes of tests whose ATS client is the same (the
    /// TLSv1.2 test's client is the default's, for one): the server gives the same answer to the same
    /// ClientHello.
    private struct Runner {
        let target: DiagnoseTarget
        let settings: PolicySettings
        let probes: ProbeLoop
        /// Verdict probes and responses already had, shared by the tests and their hops: the server
        /// gives the same answer to the same ClientHello and request.
        private var hopProbes: [String: ProbeResult] = [:]
        private var responses: [String: Result<[UInt8], LoadFailure>] = [:]

        /// Every fetch the probes made, each URL once, in order.
        var intermediateFetches: [IntermediateFetch] {
            var seen: Set<String> = []
            return hopProbes.values.flatMap { $0.observed?.intermediateFetches ?? [] }
                .sorted { $0.url < $1.url }.filter { seen.insert($0.url).inserted }
        }

        init(target: DiagnoseTarget, settings: PolicySettings, probes: ProbeLoop) {
            self.target = target
            self.settings = settings
            self.probes = probes
        }

        /// Loads the URL again under every entry the conclusion proposes, so that what it proposes is
        /// known to make the whole load pass; a further cleartext redirect to another host adds that
        /// host's entry and loads again (at most 8 hosts: the redirect limit of a load is 16).
        mutating func checkWholeLoad(_ conclusion: inout DiagnosisConclusion) throws(ProbeFailure) {
            var redirects = conclusion.redirectExceptions
            let host = target.exceptionKey
            while true {
                let entries = (conclusion.minimalException.map { [(host, $0)] } ?? []) + redirects
                let test = DiagnosticTest(
                    section: "Suggested entries", name: "The suggested entries, redirects included",
                    atsDictionary: SuggestedException.atsDictionary(entries),
                    role: .exception(conclusion.minimalException ?? SuggestedException()), isFromNSCurl: false)
                let result = try evaluate(test)
                if !result.passed, redirects.count < 8, let hop = result.load?.refusedRedirect,
                    hop.verdict?.violations.map({ $0.kind }) == [ViolationKind.cleartext],
                    !entries.contains(where: { $0.0 == hop.host.description })
                {
                    redirects.append((hop.host.description, SuggestedException(allowsInsecureHTTPLoads: true)))
                    continue
                }
                conclusion.wholeLoadChecked(
                    passed: result.passed, redirectExceptions: redirects, failure: result.reasons.first)
                return
            }
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
            // The proxy's key for these requirements, so the proxy's very probes.
            let probe =
                hopProbes[key]
                ?? probes.verdict(
                    VerdictKey(host: target.host.description, port: target.port, requirements: requirements))
            hopProbes[key] = probe
            if let reason = probe.cleartextUpstream {
                return DiagnosticResult(
                    test: test, verdict: nil, failure: Diagnosis.noTLSPrefix + "\(target.port): \(reason)")
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
            var fetcher = HopFetcher(loop: probes, policy: policy, probes: hopProbes, responses: responses)
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
