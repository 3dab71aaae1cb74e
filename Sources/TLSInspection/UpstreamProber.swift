import ATSPolicy
import POSIX
import ProxyWire

/// What the probes behind one verdict found out about an upstream, for one set of requirements.
package struct UpstreamProbeResult: Sendable {
    /// The facts of the ATS-shaped handshake, or of the permissive one when the ATS-shaped one failed.
    package var observed: ObservedConnection?
    /// Why the ATS-shaped handshake failed, when it did (the permissive probe then says why in facts).
    package var atsHandshakeFailure: HandshakeFailure?
    /// Why the upstream could not be reached at all (DNS, refused, timeout): no verdict.
    package var upstreamFailure: ProbeFailure?
    /// Set when the upstream answered the ClientHello in some other protocol: no TLS verdict.
    package var cleartextUpstream: String?
    /// The certificates as the server sent them, leaf first.
    package var peerCertificates: [X509Certificate]

    package init(
        observed: ObservedConnection? = nil, atsHandshakeFailure: HandshakeFailure? = nil,
        upstreamFailure: ProbeFailure? = nil,
        cleartextUpstream: String? = nil, peerCertificates: [X509Certificate] = []
    ) {
        self.observed = observed
        self.atsHandshakeFailure = atsHandshakeFailure
        self.upstreamFailure = upstreamFailure
        self.cleartextUpstream = cleartextUpstream
        self.peerCertificates = peerCertificates
    }
}

/// Runs blocking probe handshakes against upstreams with one set of trust anchors: the proxy's
/// verdicts and `atsproxyctl diagnose` both ask it. Safe to share between probe threads.
package final class UpstreamProber: Sendable {
    private let anchors: TrustAnchors
    private let hosts: HostsTable?
    private let timeout: Duration
    /// One configured SSL_CTX per client profile, built on first use: creating a context loads the
    /// trust store, which every probe would otherwise repeat. Contexts are safe to share once set up.
    private let contexts = Locked<[ClientProfile: TLSClientContext]>([:])
    /// Whether a path the server left an intermediate out of is completed from its CA Issuers URL,
    /// as iOS does (`--aia-fetch`).
    private let fetchesIntermediates: Bool
    /// What each CA Issuers URL gave, fetched once per prober: every test of a diagnosis meets the
    /// same server and its same missing intermediate.
    private let fetched = Locked<[String: Result<[X509Certificate], IntermediateCompletion.FetchFailure>]>([:])

    /// - Parameters:
    ///   - hosts: `--hosts-file`, consulted before the system resolver.
    ///   - fetchesIntermediates: complete paths from CA Issuers URLs, as iOS does.
    package init(
        anchors: TrustAnchors, hosts: HostsTable? = nil, timeout: Duration = .seconds(10),
        fetchesIntermediates: Bool = true
    ) {
        self.anchors = anchors
        self.hosts = hosts
        self.timeout = timeout
        self.fetchesIntermediates = fetchesIntermediates
    }

    /// Probes `host:port` as the ATS client for `requirements` would, then permissively if that
    /// failed, in this thread. `serverName` overrides the SNI the requirements' host implies.
    package func verdictProbe(host: String, port: UInt16, serverName: String? = nil, requirements: Requirements)
        -> UpstreamProbeResult
    {
        let serverName = serverName ?? Self.impliedServerName(requirements)
        let profile = ClientProfile.ats(for: requirements)
        let ats: ProbeOutcome
        do {
            ats = try handshake(host: host, port: port, serverName: serverName, profile: profile)
        } catch {
            return UpstreamProbeResult(upstreamFailure: .localResource(reason: error.description))
        }
        if let observed = ats.observed {
            return UpstreamProbeResult(observed: observed, peerCertificates: ats.peerCertificates)
        }
        if case .notTLS(let reason)? = ats.failure { return UpstreamProbeResult(cleartextUpstream: reason) }
        guard case .handshake(let reason)? = ats.failure else {
            return UpstreamProbeResult(upstreamFailure: ats.failure)
        }
        let failure = HandshakeFailure(
            reason: reason, serverClosedWithoutAlert: ats.serverClosedWithoutAlert,
            largeHello: profile.hello == .postQuantum)
        guard let permissive = try? handshake(host: host, port: port, serverName: serverName, profile: .permissive)
        else {
            return UpstreamProbeResult(atsHandshakeFailure: failure, upstreamFailure: .handshake(reason: reason))
        }
        return UpstreamProbeResult(
            observed: permissive.observed, atsHandshakeFailure: failure,
            upstreamFailure: permissive.observed == nil ? .handshake(reason: reason) : nil,
            peerCertificates: permissive.peerCertificates)
    }

    /// Connects to `host:port` and closes again: whether a cleartext server is there at all.
    package func checkConnection(host: String, port: UInt16) throws(ProbeFailure) {
        _ = try TCPConnection.connect(host: host, port: port, hosts: hosts, timeout: timeout)
    }

    /// Loads a URL from `host:port` as the ATS client for `requirements` does: the handshake (with the
    /// server name the requirements' host implies, as ``verdictProbe(host:port:serverName:requirements:)``
    /// sends), then `request` and the response head when the handshake completed.
    package func load(host: String, port: UInt16, requirements: Requirements, request: [UInt8]) throws(TLSError)
        -> LoadOutcome
    {
        ProbeLoad.https(
            host: host, port: port, serverName: Self.impliedServerName(requirements),
            context: try context(for: .ats(for: requirements)), hosts: hosts, timeout: timeout, request: request)
    }

    /// Apple's client sends no SNI for an IP literal.
    package static func impliedServerName(_ requirements: Requirements) -> String? {
        if case .name(let name) = requirements.host { name } else { nil }
    }

    /// Sends `request` to `host:port` in cleartext and reads the response head.
    package func loadCleartext(host: String, port: UInt16, request: [UInt8]) throws(ProbeFailure) -> Result<
        [UInt8], LoadFailure
    > {
        try ProbeLoad.http(host: host, port: port, hosts: hosts, timeout: timeout, request: request)
    }

    /// One handshake as `profile`, its path completed from CA Issuers URLs when the server left an
    /// intermediate out.
    package func handshake(host: String, port: UInt16, serverName: String?, profile: ClientProfile) throws(TLSError)
        -> ProbeOutcome
    {
        completingPath(
            TLSProbe.run(
                host: host, port: port, serverName: serverName, context: try context(for: profile), hosts: hosts,
                timeout: timeout))
    }

    /// `outcome` with its path completed by fetching, when it is untrusted for want of an intermediate
    /// that a certificate says where to fetch; as it is otherwise.
    package func completingPath(_ outcome: ProbeOutcome) -> ProbeOutcome {
        guard fetchesIntermediates, let observed = outcome.observed, case .untrusted = observed.trust else {
            return outcome
        }
        let validation = validate(outcome.peerCertificates, at: observed.evaluationTime)
        guard !validation.fetches.isEmpty else { return outcome }
        var completed = outcome
        completed.observed = validation.replacingPath(in: observed)
        completed.path = validation.path
        return completed
    }

    /// The path for `presented` against this prober's anchors, completed by fetching (in this thread)
    /// when an intermediate is missing and fetching is on: what `diagnose --chain` judges.
    package func validate(_ presented: [X509Certificate], at time: Int64) -> ChainValidation {
        var completion = IntermediateCompletion(presented: presented, anchors: anchors, at: time)
        guard fetchesIntermediates else { return completion.validation }
        while let url = completion.nextURL() {
            let earlier = fetched.withLock { $0[url.text] }
            let result = earlier ?? url.fetchBlocking(hosts: hosts, timeout: timeout)
            if earlier == nil { fetched.withLock { $0[url.text] = result } }
            completion.received(url, result, cached: earlier != nil)
        }
        return completion.validation
    }

    /// The shared context for `profile` (made on first use): every handshake as that client, on any
    /// thread or loop, uses the same one.
    package func context(for profile: ClientProfile) throws(TLSError) -> TLSClientContext {
        if let cached = contexts.withLock({ $0[profile] }) { return cached }
        let made = try TLSClientContext(profile: profile, anchors: anchors)
        return contexts.withLock { cache in
            if let raced = cache[profile] { return raced }
            cache[profile] = made
            return made
        }
    }
}
