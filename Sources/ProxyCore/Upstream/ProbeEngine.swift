import ATSPolicy
import EventLoop
import Glibc
import TLSInspection

/// What loading a URL over one connection showed: the handshake for an https load, and the
/// response head when the handshake got that far.
package struct LoadOutcome: Sendable {
    package var handshake: ProbeOutcome
    /// The response head's bytes, through its blank line; nil when no request was sent.
    package var response: Result<[UInt8], LoadFailure>?
}

/// The proxy's probes outside a proxy, on one event loop: verdicts (``VerdictProbeRun``, the one
/// "ATS-shaped handshake, then the permissive one to explain"), single handshakes as any client
/// (``HandshakeRun``), requests over a probe's connection (``ResponseHeadRun``) and paths completed
/// by fetching, all dialled by ``UpstreamDialer``'s one resolution rule under one ``ProbeLimits``.
/// Its client is one on this host (loopback: any destination may be reached, as the proxy lets its
/// local clients), which is what `atsproxyctl diagnose` is.
///
/// Loop-confined; completions run from the loop. ``cancelAll()`` before the loop goes.
package final class ProbeEngine {
    private let base: EventBase
    private let resolver: DNSResolver
    private let service: ProbeService
    private let limits: ProbeLimits
    private let rules: DestinationRules
    private let intermediates: EngineIntermediates
    /// Everything under way, kept alive until it ends.
    private var running: [ObjectIdentifier: any EngineRun] = [:]

    package init(base: EventBase, resolver: DNSResolver, service: ProbeService, limits: ProbeLimits) {
        self.base = base
        self.resolver = resolver
        self.service = service
        self.limits = limits
        // A client on this host, with no listener of its own to be kept from.
        rules = DestinationRules(client: .v4(0x7F00_0001), allowedDestinations: [], listeners: [])
        intermediates = EngineIntermediates(base: base, resolver: resolver, limits: limits)
    }

    /// The verdict's probes for `key`, exactly as a proxy loop makes them.
    package func verdict(_ key: VerdictKey, completion: @escaping (ProbeResult) -> Void) {
        let run = VerdictProbeRun(
            key: key, service: service, base: base, resolver: resolver, limits: limits, rules: rules,
            intermediates: intermediates)
        track(run)
        run.start { [unowned self] result in
            untrack(run)
            completion(result)
        }
    }

    /// One handshake with `host:port` as `profile`, sending `serverName`, its path completed.
    package func handshake(
        host: String, port: UInt16, serverName: String?, profile: ClientProfile,
        completion: @escaping (ProbeOutcome) -> Void
    ) {
        let run = handshakeRun(profile: profile, serverName: serverName, keepsConnection: false)
        run.start(host: host, port: port) { [unowned self] outcome, _ in
            untrack(run)
            completion(outcome)
        }
    }

    /// A handshake as `profile` with `address` (a verdict's: the server it was about) or, when nil,
    /// with `host:port` as dialled, then `request` over it and the response head.
    package func load(
        at address: SocketAddress?, host: String, port: UInt16, serverName: String?, profile: ClientProfile,
        request: [UInt8], completion: @escaping (LoadOutcome) -> Void
    ) {
        let run = handshakeRun(profile: profile, serverName: serverName, keepsConnection: true)
        run.start(host: host, port: port, at: address) { [unowned self] outcome, open in
            untrack(run)
            guard let open else { return completion(LoadOutcome(handshake: outcome, response: nil)) }
            exchange(request, over: open.connection, tls: open.stream) { response in
                completion(LoadOutcome(handshake: outcome, response: response))
            }
        }
    }

    /// `request` in cleartext to `host:port`, and the response head; a failure when no connection opened.
    package func loadCleartext(
        host: String, port: UInt16, request: [UInt8],
        completion: @escaping (Result<Result<[UInt8], LoadFailure>, ProbeFailure>) -> Void
    ) {
        dial(host: host, port: port) { [unowned self] result in
            switch result {
            case .failure(let failure): completion(.failure(failure))
            case .success(let connection):
                exchange(request, over: connection, tls: nil) { completion(.success($0)) }
            }
        }
    }

    /// Whether a connection to `host:port` opens (closed again at once): nil when it did.
    package func checkConnection(host: String, port: UInt16, completion: @escaping (ProbeFailure?) -> Void) {
        dial(host: host, port: port) { result in
            switch result {
            case .failure(let failure): completion(failure)
            case .success(let connection):
                connection.close()
                completion(nil)
            }
        }
    }

    /// The path for `presented` at `time`, completed by fetching when an intermediate is missing
    /// and the limits allow fetching, as a probe's path is completed.
    package func validate(
        _ presented: [X509Certificate], at time: Int64, completion: @escaping (ChainValidation) -> Void
    ) {
        let validation = ChainValidation(presented: presented, anchors: service.anchors, at: time)
        // The completion may run before start returns (nothing to fetch, or every answer had).
        var finished = false
        var completing: PathCompletion?
        completing = PathCompletion.startReportingPath(
            validation.observedConnection(evaluationTime: time), presented: presented, anchors: service.anchors,
            fetching: limits.fetchesIntermediates, source: intermediates, rules: rules
        ) { [unowned self] _, completed in
            finished = true
            if let completing { untrack(completing) }
            completion(completed ?? validation)
        }
        if let completing, !finished { track(completing) }
    }

    /// Stops everything under way; no completion runs after.
    package func cancelAll() {
        let runs = running.values
        running = [:]
        for run in runs { run.cancel() }
        intermediates.cancelAll()
    }

    private func handshakeRun(profile: ClientProfile, serverName: String?, keepsConnection: Bool) -> HandshakeRun {
        let run = HandshakeRun(
            base: base, resolver: resolver, service: service, limits: limits, rules: rules,
            intermediates: intermediates, profile: profile, serverName: serverName, keepsConnection: keepsConnection)
        track(run)
        return run
    }

    private func exchange(
        _ request: [UInt8], over connection: SocketStream, tls: TLSStream?,
        completion: @escaping (Result<[UInt8], LoadFailure>) -> Void
    ) {
        let run = ResponseHeadRun(connection: connection, tls: tls, limit: limits.handshakeTimeout)
        track(run)
        run.start(request: request) { [unowned self] response in
            untrack(run)
            completion(response)
        }
    }

    private func dial(
        host: String, port: UInt16, completion: @escaping (Result<SocketStream, ProbeFailure>) -> Void
    ) {
        let dialer = UpstreamDialer(
            base: base, resolver: resolver, hosts: limits.hosts, timeout: limits.connectTimeout,
            marking: limits.upstreamMarking, vet: rules.vet)
        track(dialer)
        dialer.dial(host: host, port: port) { [unowned self] result in
            untrack(dialer)
            switch result {
            case .failure(.refused(let refusal)):
                completion(.failure(.connect(host: host, port: port, reason: "refused: \(refusal)")))
            case .failure(.unreachable(let failure, _)):
                completion(.failure(failure))
            case .success(let (connection, _)):
                completion(.success(connection))
            }
        }
    }

    private func track(_ run: any EngineRun) { running[ObjectIdentifier(run)] = run }
    private func untrack(_ run: any EngineRun) { running[ObjectIdentifier(run)] = nil }
}

/// Something under way in a ``ProbeEngine``, which it can stop.
protocol EngineRun: AnyObject {
    func cancel()
}

extension VerdictProbeRun: EngineRun {}
extension HandshakeRun: EngineRun {}
extension ResponseHeadRun: EngineRun {}
extension UpstreamDialer: EngineRun {}
extension PathCompletion: EngineRun {}
