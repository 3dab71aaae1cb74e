import ATSPolicy
import EventLoop
import TLSInspection

/// One handshake as one client profile, on the loop, outside a verdict: dial (the name by the
/// dialer's one rule, or only the address a verdict was about), handshake within the handshake
/// timeout from the connect (``HandshakeProbe``), and complete the path by fetching as a verdict's
/// probe does (``PathCompletion``). What `diagnose`'s server survey and its loads make; a verdict's
/// own two handshakes are ``VerdictProbeRun``'s.
///
/// Loop-confined. It owns what it opened until it finishes (a kept connection is then its
/// completion's to close) or is cancelled; the completion runs once, from the loop, unless
/// cancelled first.
final class HandshakeRun {
    private let base: EventBase
    private let service: ProbeService
    private let limits: ProbeLimits
    private let rules: DestinationRules
    private weak var intermediates: (any IntermediateSource)?
    private let dialer: UpstreamDialer
    private let profile: ClientProfile
    private let serverName: String?
    private let keepsConnection: Bool
    private var probe: HandshakeProbe?
    private var pathCompletion: PathCompletion?
    /// A kept connection while its path is completed.
    private var opened: OpenTLSConnection?
    private var completion: ((ProbeOutcome, OpenTLSConnection?) -> Void)?

    /// - Parameters:
    ///   - serverName: the SNI sent (nil: none, as for an IP literal).
    ///   - keepsConnection: a completed handshake's connection is handed to the completion, open.
    init(
        base: EventBase, resolver: DNSResolver, service: ProbeService, limits: ProbeLimits, rules: DestinationRules,
        intermediates: (any IntermediateSource)?, profile: ClientProfile, serverName: String?,
        keepsConnection: Bool = false
    ) {
        self.base = base
        self.service = service
        self.limits = limits
        self.rules = rules
        self.intermediates = intermediates
        self.profile = profile
        self.serverName = serverName
        self.keepsConnection = keepsConnection
        dialer = UpstreamDialer(
            base: base, resolver: resolver, hosts: limits.hosts, timeout: limits.connectTimeout,
            marking: limits.upstreamMarking, vet: rules.vet)
    }

    /// Dials `host:port` (only `address` when given) and handshakes.
    func start(
        host: String, port: UInt16, at address: SocketAddress? = nil,
        completion: @escaping (ProbeOutcome, OpenTLSConnection?) -> Void
    ) {
        self.completion = completion
        let dialled: UpstreamDialer.Completion = { [unowned self] result in
            switch result {
            case .failure(.refused(let refusal)):
                fail(.connect(host: host, port: port, reason: "refused: \(refusal)"))
            case .failure(.unreachable(let failure, _)):
                fail(failure)
            case .success(let (connection, _)):
                handshake(connection)
            }
        }
        if let address {
            dialer.connect(to: address, host: host, completion: dialled)
        } else {
            dialer.dial(host: host, port: port, completion: dialled)
        }
    }

    func cancel() {
        completion = nil
        dialer.cancel()
        probe?.cancel()
        probe = nil
        pathCompletion?.cancel()
        pathCompletion = nil
        opened?.connection.close()
        opened = nil
    }

    private func handshake(_ connection: SocketStream) {
        let probe: HandshakeProbe
        do {
            probe = try HandshakeProbe(
                base: base, connection: connection, context: try service.context(for: profile),
                serverName: serverName,
                deadline: MonotonicClock.nowMilliseconds() + limits.handshakeTimeout.milliseconds,
                handshakeLimit: limits.handshakeTimeout, keepsConnection: keepsConnection)
        } catch {
            connection.close()
            return fail(.localResource(reason: error.description))
        }
        self.probe = probe
        probe.start { [unowned self] outcome in
            let open = self.probe?.takeConnection()
            self.probe = nil
            guard let observed = outcome.observed else {
                open?.connection.close()
                return finish(outcome)
            }
            opened = open
            pathCompletion = PathCompletion.startReportingPath(
                observed, presented: outcome.peerCertificates, anchors: service.anchors,
                fetching: limits.fetchesIntermediates, source: intermediates, rules: rules
            ) { [unowned self] observed, validation in
                var completed = outcome
                completed.observed = observed
                if let validation { completed.path = validation.path }
                finish(completed)
            }
        }
    }

    private func fail(_ failure: ProbeFailure) {
        finish(ProbeOutcome(observed: nil, failure: failure, peerCertificates: []))
    }

    private func finish(_ outcome: ProbeOutcome) {
        let completion = self.completion
        let open = opened
        self.completion = nil
        opened = nil
        pathCompletion = nil
        guard let completion else {
            open?.connection.close()
            return
        }
        completion(outcome, open)
    }
}
