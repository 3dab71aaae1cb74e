import ATSPolicy
import ProxyWire
import TLSInspection

/// A path completed by fetching, on the loop: the intermediates a server left out, asked of an
/// ``IntermediateSource`` one after another as ``IntermediateCompletion`` names them, then the
/// observed facts with the completed path. Shared by the tunnel's probe (``VerdictProbeRun``) and
/// intercept mode's upstream handshake, so that both judge the path iOS would judge. Loop-confined;
/// ``cancel()`` drops the completion (a fetch under way goes on for whoever else waits for it).
final class PathCompletion {
    private weak var source: (any IntermediateSource)?
    private let rules: DestinationRules
    private var steps: IntermediateCompletion
    private let observed: ObservedConnection
    private var completion: ((ObservedConnection, ChainValidation?) -> Void)?
    private var request: UInt64?

    /// Completes `observed`'s path when it is untrusted for want of an intermediate and fetching is
    /// on; otherwise calls `then` at once and returns nil.
    static func start(
        _ observed: ObservedConnection, presented: [X509Certificate], anchors: TrustAnchors, fetching: Bool,
        source: (any IntermediateSource)?, rules: DestinationRules, then: @escaping (ObservedConnection) -> Void
    ) -> PathCompletion? {
        startReportingPath(
            observed, presented: presented, anchors: anchors, fetching: fetching, source: source, rules: rules
        ) { observed, _ in then(observed) }
    }

    /// As ``start(_:presented:anchors:fetching:source:rules:then:)``, and with the validation that
    /// rebuilt the path (nil when nothing was fetched): the path's certificates, for whoever shows them.
    static func startReportingPath(
        _ observed: ObservedConnection, presented: [X509Certificate], anchors: TrustAnchors, fetching: Bool,
        source: (any IntermediateSource)?, rules: DestinationRules,
        then: @escaping (ObservedConnection, ChainValidation?) -> Void
    ) -> PathCompletion? {
        guard fetching, case .untrusted = observed.trust, let source else {
            then(observed, nil)
            return nil
        }
        let run = PathCompletion(
            source: source, rules: rules,
            steps: IntermediateCompletion(presented: presented, anchors: anchors, at: observed.evaluationTime),
            observed: observed, then: then)
        run.next()
        return run
    }

    private init(
        source: any IntermediateSource, rules: DestinationRules, steps: IntermediateCompletion,
        observed: ObservedConnection, then: @escaping (ObservedConnection, ChainValidation?) -> Void
    ) {
        self.source = source
        self.rules = rules
        self.steps = steps
        self.observed = observed
        completion = then
    }

    func cancel() {
        completion = nil
        if let request { source?.cancelIntermediateRequest(request) }
        request = nil
    }

    private func next() {
        guard completion != nil else { return }
        guard let url = steps.nextURL(), let source else {
            let validation = steps.validation
            let completion = self.completion
            self.completion = nil
            if validation.fetches.isEmpty {
                completion?(observed, nil)
            } else {
                completion?(validation.replacingPath(in: observed), validation)
            }
            return
        }
        let asked = source.requestIntermediate(url, rules: rules) { [weak self] answer, cached in
            guard let self else { return }
            request = nil
            steps.received(url, answer, cached: cached)
            next()
        }
        switch asked {
        case .answered(let answer):
            steps.received(url, answer, cached: true)
            next()
        case .pending(let number):
            request = number
        case .delivered:
            // The answer came back before the request returned (a fetch refused at once).
            break
        }
    }
}
