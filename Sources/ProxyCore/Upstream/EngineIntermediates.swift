import EventLoop
import ProxyWire
import TLSInspection

/// Where a ``ProbeEngine``'s probes get an intermediate their server left out: fetched on the
/// engine's own loop (``IntermediateFetchRun``, under the engine's destination rules), each URL
/// once per engine, since every test of a diagnosis meets the same server and its same missing
/// intermediate. The proxy's loops share theirs through ``ProxyServer`` instead. Loop-confined.
final class EngineIntermediates: IntermediateSource {
    private let base: EventBase
    private let resolver: DNSResolver
    private let limits: ProbeLimits
    private var answers: [String: IntermediateFetchCache.Answer] = [:]
    /// Fetches under way, by URL, with the requests waiting for each.
    private var fetches: [String: (run: IntermediateFetchRun, requests: [UInt64])] = [:]
    private var waiting: [UInt64: (IntermediateFetchCache.Answer, Bool) -> Void] = [:]
    private var lastRequest: UInt64 = 0

    init(base: EventBase, resolver: DNSResolver, limits: ProbeLimits) {
        self.base = base
        self.resolver = resolver
        self.limits = limits
    }

    func requestIntermediate(
        _ url: CAIssuersURL, rules: DestinationRules,
        completion: @escaping (IntermediateFetchCache.Answer, _ cached: Bool) -> Void
    ) -> IntermediateRequest {
        if let answer = answers[url.text] { return .answered(answer) }
        lastRequest += 1
        let request = lastRequest
        waiting[request] = completion
        if fetches[url.text] != nil {
            fetches[url.text]?.requests.append(request)
            return .pending(request)
        }
        let run = IntermediateFetchRun(url: url, base: base, resolver: resolver, limits: limits, rules: rules)
        fetches[url.text] = (run, [request])
        run.start { [unowned self] answer in
            answers[url.text] = answer
            for waiter in fetches.removeValue(forKey: url.text)?.requests ?? [] {
                waiting.removeValue(forKey: waiter)?(answer, false)
            }
        }
        // A dial refused at once has delivered the answer already.
        return waiting[request] == nil ? .delivered : .pending(request)
    }

    func cancelIntermediateRequest(_ request: UInt64) {
        waiting[request] = nil
    }

    /// Stops every fetch (the engine is going away); nobody is told.
    func cancelAll() {
        let runs = fetches.values.map(\.run)
        fetches = [:]
        waiting = [:]
        for run in runs { run.cancel() }
    }
}
