import EventLoop
import ProxyWire
import TLSInspection

/// Where a probe gets an intermediate its server left out: a narrow view of its ``ProxyServer``,
/// which answers from the shared cache, joins another loop's fetch, or fetches on its own loop.
protocol IntermediateSource: AnyObject {
    /// Asks for the certificates at `url`, fetched under `rules`. An answer already had comes back at
    /// once; otherwise `completion` runs later, from the loop, unless the request is cancelled.
    func requestIntermediate(
        _ url: CAIssuersURL, rules: DestinationRules,
        completion: @escaping (IntermediateFetchCache.Answer, _ cached: Bool) -> Void
    ) -> IntermediateRequest

    /// The requester went away: its completion will not run (the fetch goes on for any other).
    func cancelIntermediateRequest(_ request: UInt64)
}

enum IntermediateRequest {
    /// From the cache of earlier fetches.
    case answered(IntermediateFetchCache.Answer)
    /// Under way; the number cancels it.
    case pending(UInt64)
    /// Fetched (or refused) at once: the completion has already run.
    case delivered
}

extension ProxyServer: IntermediateSource {
    var intermediateSource: (any IntermediateSource)? { self }

    func requestIntermediate(
        _ url: CAIssuersURL, rules: DestinationRules,
        completion: @escaping (IntermediateFetchCache.Answer, _ cached: Bool) -> Void
    ) -> IntermediateRequest {
        guard let poster = messages else { return .answered(.failure(.init("the proxy is stopping"))) }
        nextIntermediateRequest += 1
        let request = nextIntermediateRequest
        let cache = probes.intermediates
        // Keyed by where the client may go too: a fetch another client's rules allowed (or refused)
        // says nothing of this one's.
        let key = rules.fetchScope + " " + url.text
        let lookup = cache.lookup(key, now: ProxyServer.nowMilliseconds()) { answer in
            _ = poster.post(.intermediateFetched(request: request, answer: answer))
        }
        switch lookup {
        case .answered(let answer):
            return .answered(answer)
        case .waiting:
            intermediateRequests[request] = completion
        case .fetch:
            // The first requester's destination rules decide where the fetch may go; the answer, a
            // public certificate, is then shared with any requester of the same URL.
            intermediateRequests[request] = completion
            let run = IntermediateFetchRun(
                url: url, base: base, resolver: resolver, limits: settings.probeLimits, rules: rules)
            intermediateRuns[request] = (run, key)
            run.start { [weak self] answer in
                cache.complete(key, with: answer, now: ProxyServer.nowMilliseconds())
                self?.intermediateRuns[request] = nil
                self?.intermediateRequests.removeValue(forKey: request)?(answer, false)
            }
            // A dial refused at once has delivered the answer already.
            if intermediateRequests[request] == nil { return .delivered }
        }
        return .pending(request)
    }

    func cancelIntermediateRequest(_ request: UInt64) {
        intermediateRequests[request] = nil
    }

    /// The loop is stopping: its fetches end, and whoever waits on another loop is told.
    func cancelIntermediateFetches() {
        let runs = intermediateRuns
        intermediateRuns = [:]
        intermediateRequests = [:]
        for (run, url) in runs.values {
            run.cancel()
            probes.intermediates.complete(
                url, with: .failure(.init("the proxy stopped")), now: ProxyServer.nowMilliseconds())
        }
    }
}
