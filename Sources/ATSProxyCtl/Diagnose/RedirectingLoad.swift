import ATSPolicy
import ProxyCore
import ProxyWire
import TLSInspection

/// One load of a URL under one ATS policy, following redirects as URLSession does, the way
/// `nscurl --ats-diagnostics` decides PASS: by whether the load completes.
///
/// Each hop is judged by the same policy for its own host and scheme (an exception names hosts, so
/// a hop to another host gets what the policy says of that host, and an `http://` hop needs
/// insecure loads allowed for its host). The load ends at the first response that is not a
/// redirect (whatever its status: a 404 is a completed load), at the first hop ATS refuses, or when
/// a hop cannot be fetched.
struct RedirectingLoad {
    struct Hop {
        var url: LoadURL
        /// What ATS said of the hop; nil when it never got as far as a verdict.
        var verdict: Verdict?
        /// The response's status, when one came.
        var status: Int?
        /// The redirect's target as the server wrote it.
        var location: String?
        /// Why the hop got no response, when it did not.
        var failure: String?
    }

    enum Outcome: Equatable {
        /// The last hop answered with `status`, not a redirect.
        case loaded(status: Int)
        /// ATS refused the last hop (its verdict says why).
        case refused
        /// The last hop failed for another reason.
        case failed(String)
    }

    var hops: [Hop]
    var outcome: Outcome

    /// What fetching one hop showed: the verdict, and the response head when ATS let it through.
    struct Fetched {
        var verdict: Verdict?
        var response: Result<[UInt8], LoadFailure>?
        /// Why there is no verdict, when there is none.
        var failure: String?
    }

    /// URLSession follows at most 16 redirects, then fails with NSURLErrorHTTPTooManyRedirects.
    static let maximumRedirects = 16

    static func run(_ url: LoadURL, fetch: (LoadURL) -> Fetched) -> RedirectingLoad {
        var hops: [Hop] = []
        var next = url
        while true {
            let fetched = fetch(next)
            var hop = Hop(url: next, verdict: fetched.verdict)
            guard let verdict = fetched.verdict else {
                hop.failure = fetched.failure ?? "no verdict"
                hops.append(hop)
                return RedirectingLoad(hops: hops, outcome: .failed(hop.failure!))
            }
            guard verdict.isCompliant else {
                hops.append(hop)
                return RedirectingLoad(hops: hops, outcome: .refused)
            }
            let head: ResponseHead
            switch fetched.response {
            case .success(let bytes)?:
                var parser = ResponseHeadParser()
                guard case .complete(let parsed, _) = parser.consume(bytes) else {
                    return failed(hop, "the response head is not HTTP/1.x", hops)
                }
                head = parsed
            case .failure(let failure)?:
                return failed(hop, failure.reason, hops)
            case nil:
                return failed(hop, fetched.failure ?? "no response", hops)
            }
            hop.status = head.status
            guard [301, 302, 303, 307, 308].contains(head.status), let location = head.headers.first("Location") else {
                hops.append(hop)
                return RedirectingLoad(hops: hops, outcome: .loaded(status: head.status))
            }
            hop.location = location
            hops.append(hop)
            guard hops.count <= maximumRedirects else {
                return RedirectingLoad(
                    hops: hops, outcome: .failed("more than \(maximumRedirects) redirects (NSURLErrorDomain -1007)"))
            }
            do {
                next = try next.resolving(location)
            } catch {
                return RedirectingLoad(
                    hops: hops, outcome: .failed("the redirect's Location \"\(location)\": \(error)"))
            }
        }
    }

    private static func failed(_ hop: Hop, _ reason: String, _ hops: [Hop]) -> RedirectingLoad {
        var hop = hop
        hop.failure = reason
        return RedirectingLoad(hops: hops + [hop], outcome: .failed(reason))
    }
}

/// Fetches hops for ``RedirectingLoad`` with real connections: a verdict from the proxy's probes
/// (shared by the hops and tests that would send the same ClientHello), then the request over a
/// connection of the same shape to the address the verdict was about, as the proxy's tunnel
/// connects to its verdict's address.
struct HopFetcher {
    let loop: ProbeLoop
    let policy: TransportSecurityPolicy
    /// Verdict probes already made, by ``probeKey(host:port:profile:)``.
    var probes: [String: ProbeResult]
    /// Response heads already had, by URL and (for https) client profile.
    var responses: [String: Result<[UInt8], LoadFailure>]

    init(
        loop: ProbeLoop, policy: TransportSecurityPolicy, probes: [String: ProbeResult] = [:],
        responses: [String: Result<[UInt8], LoadFailure>] = [:]
    ) {
        self.loop = loop
        self.policy = policy
        self.probes = probes
        self.responses = responses
    }

    static func probeKey(host: String, port: UInt16, profile: ClientProfile) -> String { "\(host) \(port) \(profile)" }

    mutating func fetch(_ url: LoadURL) -> RedirectingLoad.Fetched {
        let requirements = policy.requirements(for: url.host, scheme: url.scheme)
        let host = url.host.description
        guard url.scheme == .https else {
            let verdict = policy.verdict(for: requirements, observed: nil)
            guard verdict.isCompliant else { return RedirectingLoad.Fetched(verdict: verdict) }
            if let known = responses[url.description] {
                return RedirectingLoad.Fetched(verdict: verdict, response: known)
            }
            do {
                let response = try loop.loadCleartext(host: host, port: url.port, request: url.request)
                responses[url.description] = response
                return RedirectingLoad.Fetched(verdict: verdict, response: response)
            } catch {
                return RedirectingLoad.Fetched(verdict: verdict, failure: error.description)
            }
        }
        let profile = ClientProfile.ats(for: requirements)
        let key = Self.probeKey(host: host, port: url.port, profile: profile)
        let probe = probes[key] ?? loop.verdict(VerdictKey(host: host, port: url.port, requirements: requirements))
        probes[key] = probe
        if let reason = probe.cleartextUpstream {
            return RedirectingLoad.Fetched(failure: "the server does not speak TLS on port \(url.port): \(reason)")
        }
        guard let observed = probe.observed else {
            return RedirectingLoad.Fetched(failure: probe.upstreamFailure?.description ?? "no handshake completed")
        }
        let verdict = policy.verdict(
            for: requirements, observed: observed, atsHandshakeFailure: probe.atsHandshakeFailure)
        guard verdict.isCompliant else { return RedirectingLoad.Fetched(verdict: verdict) }
        let responseKey = "\(url) \(profile)"
        if let known = responses[responseKey] { return RedirectingLoad.Fetched(verdict: verdict, response: known) }
        let load = loop.load(
            at: probe.address, host: host, port: url.port, serverName: VerdictKey.impliedServerName(requirements),
            profile: profile, request: url.request)
        if let response = load.response {
            responses[responseKey] = response
            return RedirectingLoad.Fetched(verdict: verdict, response: response)
        }
        return RedirectingLoad.Fetched(
            verdict: verdict, failure: load.handshake.failure?.description ?? "the handshake for the request failed")
    }
}
