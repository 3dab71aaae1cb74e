import ATSPolicy
import EventLoop
import ProxyWire
import TLSInspection

/// The probes behind one verdict, on one loop: reach the upstream (each address in turn, within the
/// connect timeout), make the ATS-shaped handshake, and, only when the server refused that one in
/// the handshake itself (an alert, no common version or suite, a close with no alert), the
/// permissive one to the same address, which says why. Never after a timeout, a reset or a refused
/// connection: those tell nothing a second handshake would explain.
///
/// Both handshakes share one deadline, the handshake timeout from the moment the first connect
/// completed, so a verdict takes at most the connect timeout per address plus the handshake timeout.
/// Loop-confined; owned by its ``ProxyServer`` until it finishes or is cancelled.
final class VerdictProbeRun {
    private let key: VerdictKey
    private let service: ProbeService
    private let base: EventBase
    private let dialer: UpstreamDialer
    private let handshakeTimeout: Duration
    private var handshake: HandshakeProbe?
    private var deadline: Int64 = 0
    private var completion: ((ProbeResult) -> Void)?
    private let rules: DestinationRules
    private let fetchesIntermediates: Bool
    private weak var intermediates: (any IntermediateSource)?
    /// A path being completed by fetching.
    private var pathCompletion: PathCompletion?
    private var progress: ((ProbeProgress) -> Void)?

    /// - Parameter rules: where the client that asked for the verdict may be connected; an address
    ///   they refuse gets no byte, and the report says so (``ProbeResult/refusal``).
    init(
        key: VerdictKey, service: ProbeService, base: EventBase, resolver: DNSResolver, limits: ProbeLimits,
        rules: DestinationRules, intermediates: (any IntermediateSource)? = nil
    ) {
        self.key = key
        self.rules = rules
        self.intermediates = intermediates
        fetchesIntermediates = limits.fetchesIntermediates
        self.service = service
        self.base = base
        handshakeTimeout = limits.handshakeTimeout
        dialer = UpstreamDialer(
            base: base, resolver: resolver, hosts: limits.hosts, timeout: limits.connectTimeout,
            marking: limits.upstreamMarking, vet: rules.vet)
    }

    private var serverName: String? { key.sentServerName }

    /// Starts; `completion` runs once, from the loop, unless the run is cancelled first.
    /// - Parameter progress: told of the probe's connection as it is opened, and when the ATS-shaped
    ///   handshake was refused and the permissive one will connect again (``ProbeProgress``).
    func start(progress: ((ProbeProgress) -> Void)? = nil, completion: @escaping (ProbeResult) -> Void) {
        self.completion = completion
        dialer.onConnecting = progress.map { progress in { progress(.connecting($0)) } }
        self.progress = progress
        let dialled: UpstreamDialer.Completion = { [unowned self] result in
            switch result {
            case .failure(.refused(let refusal)):
                finish(ProbeResult(refusal: refusal, host: key.host, port: key.port))
            case .failure(.unreachable(let failure, _)):
                finish(ProbeResult(upstreamFailure: failure))
            case .success(let (connection, address)):
                deadline = MonotonicClock.nowMilliseconds() + handshakeTimeout.milliseconds
                handshake(connection, address: address, profile: key.profile) { [unowned self] outcome in
                    atsHandshakeEnded(outcome, address: address)
                }
            }
        }
        if let address = key.address {
            dialer.connect(to: address, host: key.host, completion: dialled)
        } else {
            dialer.dial(host: key.host, port: key.port, completion: dialled)
        }
    }

    /// Stops whatever is under way; the completion will not run.
    func cancel() {
        completion = nil
        dialer.cancel()
        handshake?.cancel()
        handshake = nil
        pathCompletion?.cancel()
        pathCompletion = nil
    }

    private func atsHandshakeEnded(_ outcome: ProbeOutcome, address: SocketAddress) {
        if let observed = outcome.observed {
            return completePath(observed, presented: outcome.peerCertificates) { [unowned self] observed in
                finish(ProbeResult(observed: observed, address: address))
            }
        }
        guard let failure = outcome.failure else {
            return finish(ProbeResult(upstreamFailure: .handshake(reason: "the handshake ended without a result")))
        }
        switch failure {
        case .notTLS(let reason):
            finish(ProbeResult(cleartextUpstream: reason, address: address))
        case .handshake(let reason):
            let refusal = HandshakeFailure(
                reason: reason, serverClosedWithoutAlert: outcome.serverClosedWithoutAlert,
                largeHello: key.profile.hello == .postQuantum)
            explain(refusal, address: address)
        default:
            finish(ProbeResult(upstreamFailure: failure, address: address))
        }
    }

    /// The permissive handshake, to the same address, by the same deadline: its facts say why the
    /// ATS-shaped one was refused. If it cannot complete either, the refusal is all there is.
    private func explain(_ refusal: HandshakeFailure, address: SocketAddress) {
        dialer.onConnecting = nil
        progress?(.explaining)
        progress = nil
        let unexplained = ProbeResult(
            atsHandshakeFailure: refusal, upstreamFailure: .handshake(reason: refusal.reason), address: address)
        let left = deadline - MonotonicClock.nowMilliseconds()
        guard left > 0 else { return finish(unexplained) }
        // The connect too is bounded by what is left of the verdict's deadline.
        dialer.connect(to: address, host: key.host, within: .milliseconds(left)) { [unowned self] result in
            guard case .success(let (connection, _)) = result else { return finish(unexplained) }
            handshake(connection, address: address, profile: .permissive) { [unowned self] outcome in
                guard let observed = outcome.observed else { return finish(unexplained) }
                completePath(observed, presented: outcome.peerCertificates) { [unowned self] observed in
                    finish(ProbeResult(observed: observed, atsHandshakeFailure: refusal, address: address))
                }
            }
        }
    }

    /// `observed`, its path completed from CA Issuers URLs when the server left an intermediate out,
    /// as iOS completes it; as it is otherwise.
    private func completePath(
        _ observed: ObservedConnection, presented: [X509Certificate], then: @escaping (ObservedConnection) -> Void
    ) {
        pathCompletion = PathCompletion.start(
            observed, presented: presented, anchors: service.anchors, fetching: fetchesIntermediates,
            source: intermediates, rules: rules, then: then)
    }

    private func handshake(
        _ connection: SocketStream, address: SocketAddress, profile: ClientProfile,
        then: @escaping (ProbeOutcome) -> Void
    ) {
        let probe: HandshakeProbe
        do {
            probe = try HandshakeProbe(
                base: base, connection: connection, context: try service.context(for: profile),
                serverName: serverName, deadline: deadline, handshakeLimit: handshakeTimeout)
        } catch {
            connection.close()
            return finish(ProbeResult(upstreamFailure: .localResource(reason: error.description), address: address))
        }
        handshake = probe
        if let progress { probe.onFirstBytes = { progress(.answered) } }
        probe.start { [unowned self] outcome in
            handshake = nil
            then(outcome)
        }
    }

    private func finish(_ result: ProbeResult) {
        let completion = self.completion
        cancel()
        completion?(result)
    }
}

/// How far a probe has come, for the session that started it: its tunnel may open its own upstream
/// connection alongside (``ConnectTunnel``), and must give it up before a second probe connection.
enum ProbeProgress {
    /// The probe's connect to this address was issued.
    case connecting(SocketAddress)
    /// The server's first bytes reached the probe: it is serving the probe's connection, so a
    /// connection of the tunnel's cannot be what it is waiting on.
    case answered
    /// The ATS-shaped handshake was refused: the permissive one connects again, and a server that
    /// accepts one connection at a time must not find another waiting before it.
    case explaining
}
