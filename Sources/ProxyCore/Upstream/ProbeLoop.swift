import ATSPolicy
import EventLoop
import TLSInspection

/// The probe engine in an event loop of its own, run on the calling thread until each question's
/// answer: `atsproxyctl diagnose` asks one question at a time and gets the proxy's own probes
/// (``ProbeEngine``), not copies of them, with the proxy's one way of resolving a name.
///
/// Not `Sendable`: the thread that makes it uses it (a URL list's workers each make their own,
/// sharing only the ``ProbeService``, whose TLS contexts are made once for all).
package final class ProbeLoop {
    private let base: EventBase
    // Optional so that deinit can release them in order: the engine (and what it has under way),
    // then the resolver, both before the base they live on.
    private var resolver: DNSResolver?
    private var engine: ProbeEngine?

    package init(service: ProbeService, limits: ProbeLimits) throws(EventError) {
        base = try EventBase()
        let resolver = try DNSResolver(base: base)
        self.resolver = resolver
        engine = ProbeEngine(base: base, resolver: resolver, service: service, limits: limits)
    }

    /// A new loop; its failure in the words of a probe that could not be made for want of
    /// something local.
    package static func starting(service: ProbeService, limits: ProbeLimits) throws(ProbeFailure) -> ProbeLoop {
        do {
            return try ProbeLoop(service: service, limits: limits)
        } catch {
            throw .localResource(reason: "no event loop for the probes: \(error)")
        }
    }

    deinit {
        engine?.cancelAll()
        engine = nil
        resolver = nil
    }

    /// The verdict's probes for `key`, as a proxy loop makes them.
    package func verdict(_ key: VerdictKey) -> ProbeResult {
        answer { engine, done in engine.verdict(key, completion: done) }
    }

    /// One handshake with `host:port` as `profile`, its path completed.
    package func handshake(host: String, port: UInt16, serverName: String?, profile: ClientProfile) -> ProbeOutcome {
        answer { engine, done in
            engine.handshake(host: host, port: port, serverName: serverName, profile: profile, completion: done)
        }
    }

    /// A handshake as `profile` with `address` (or `host:port` as dialled, when nil), then
    /// `request` and the response head.
    package func load(
        at address: SocketAddress?, host: String, port: UInt16, serverName: String?, profile: ClientProfile,
        request: [UInt8]
    ) -> LoadOutcome {
        answer { engine, done in
            engine.load(
                at: address, host: host, port: port, serverName: serverName, profile: profile, request: request,
                completion: done)
        }
    }

    /// `request` in cleartext, and the response head; throws when no connection opened.
    package func loadCleartext(host: String, port: UInt16, request: [UInt8]) throws(ProbeFailure) -> Result<
        [UInt8], LoadFailure
    > {
        try answer { engine, done in
            engine.loadCleartext(host: host, port: port, request: request, completion: done)
        }.get()
    }

    /// Throws when no connection to `host:port` opens.
    package func checkConnection(host: String, port: UInt16) throws(ProbeFailure) {
        let failure: ProbeFailure? = answer { engine, done in
            engine.checkConnection(host: host, port: port, completion: done)
        }
        if let failure { throw failure }
    }

    /// The path for `presented` at `time`, completed by fetching as a probe's is.
    package func validate(_ presented: [X509Certificate], at time: Int64) -> ChainValidation {
        answer { engine, done in engine.validate(presented, at: time, completion: done) }
    }

    /// Asks the engine and runs the loop until the answer comes (at once, when it came before the
    /// loop needed to run). Every question the engine takes ends within its limits, so this returns.
    private func answer<Answer>(_ ask: (ProbeEngine, @escaping (Answer) -> Void) -> Void) -> Answer {
        guard let engine else { preconditionFailure("the probe loop is going away") }
        var answer: Answer?
        let base = self.base
        ask(engine) { given in
            answer = given
            base.stopper.stop()
        }
        while true {
            if let answer { return answer }
            base.run()
        }
    }
}
