import ATSPolicy
import EventLoop
import LogRecord
import ProxyWire
import TLSInspection

/// A CONNECT, from its verdict to its close: the requirements for the host, a verdict from a
/// (cached, shared) probe, then a 403, a 502 or 504, or an upstream connection to the address the
/// verdict judged and `200 Connection established`. Then the device's first bytes are classified
/// before any reach the server (``ConnectTunnel+FirstBytes``), and bytes are relayed both ways with
/// backpressure and half-closes (``ConnectTunnel+Relay``).
///
/// Each phase holds its own data (``State``): the upstream exists only in the phases that have one,
/// so no phase can reach a connection it does not hold. The session owns the client stream (and
/// its callbacks, which it hands on to the tunnel from the CONNECT's head on: ``ClientBytesHandler``),
/// the log record and the responses; the tunnel is the last thing a session does, so it ends the
/// session when it ends. Loop-confined.
final class ConnectTunnel: ClientBytesHandler {
    /// Where the tunnel is, with what that phase needs.
    enum State {
        /// The verdict for the CONNECT's host is being looked up or probed; `early`: the tunnel's own
        /// connection, opened alongside the probe this session started.
        case awaitingVerdict(early: EarlyUpstream?)
        /// Allowed; the upstream connection is being opened (or `early` is finishing its dial).
        case connecting(early: EarlyUpstream?)
        /// 200 sent; the device's first bytes are held until they show TLS or cleartext, and nothing
        /// is read from the server until they are judged.
        case classifying(upstream: any ByteStream)
        /// The ClientHello named another host: its own verdict is pending (the upstream was given
        /// up meanwhile, for servers that serve one connection at a time), the bytes still held.
        case awaitingServerNameVerdict(name: String, Requirements)
        /// The ClientHello came through a tunnel opened before any verdict (the host accepts
        /// cleartext): its TLS verdict is pending, the upstream given up meanwhile, the bytes held.
        case awaitingDeferredVerdict
        /// The server name's verdict allowed it: the upstream is being opened again.
        case reconnecting
        /// `--tunnel-start connect`: the 200 went before the CONNECT's verdict, and the device's
        /// ClientHello (`forwarded` bytes, still held in the client's input) went to the server
        /// while the probe runs; the server's answer waits in `upstream` until the verdict.
        case helloAhead(upstream: any ByteStream, forwarded: Int)
        /// `--tunnel-start connect`: the early connection was given up before the device's first
        /// bytes were judged; they wait, unread, for the verdict, then a new connection to the
        /// address it judged (``reattach(with:)``).
        case detached
        /// Judged: bytes flow both ways, through the proxy's buffers while the server's hello is read.
        case relaying(upstream: any ByteStream)
        /// Judged and both hellos read: the bytes move kernel to kernel (``SpliceRelay``), which
        /// owns both connections' reading and callbacks until it ends.
        case splicing(upstream: any ByteStream, relay: SpliceRelay)
        /// Intercept mode: the device's TLS is terminated and the proxy's own upstream handshake
        /// judged (``InterceptedTunnel``, which holds the upstream from here on).
        case intercepting(InterceptedTunnel)
        /// Over (the session is closing).
        case done
    }

    unowned let owner: any TunnelOwner
    /// What the tunnel has found and decided: the session folds it into the log record.
    var findings = TunnelFindings()
    let host: String
    let port: UInt16
    /// The policy's answer for the CONNECT's host (https).
    let requirements: Requirements
    /// The app the CONNECT's User-Agent named, which the request lines repeat when theirs name none.
    let connectApp: AppAgent?
    /// A captured connection's original destination (``SessionCapture``): the address the device
    /// dialled, which the probe and the tunnel connect to instead of resolving ``host``. Such a
    /// tunnel sends no `200` (the device sent no CONNECT), and answers a refusal with a TLS alert
    /// or a reset, since the device awaits a ServerHello.
    let capturedDestination: SocketAddress?
    var state = State.awaitingVerdict(early: nil)
    /// Whether the verdict was looked up again after another client's probe was refused an address
    /// this client may reach (once: the second probe runs with this client's rules).
    private var verdictRetried = false
    /// What the device's and the server's first bytes have shown so far.
    var inspection = TunnelInspection()
    /// Whether the `cleartext` rule lets http:// to this host through: ATS does not apply to it
    /// (a local host), or an exception allows insecure loads. Such a tunnel opens before any TLS
    /// verdict, and whatever is sent first, by either side, is judged as it comes.
    let acceptsCleartext: Bool
    /// Whether the tunnel was opened before any verdict (``acceptsCleartext``): a ClientHello then
    /// gets its TLS verdict when it comes.
    private(set) var verdictDeferred = false
    /// Intercept mode, for a host it may intercept: the tunnel opens at TCP connect, and the
    /// device's ClientHello decides (``InterceptedTunnel``, or the probe's verdict when it is not
    /// intercepted after all).
    private(set) var interceptPlanned = false
    /// The address the upstream connection reached.
    private(set) var upstreamAddress: SocketAddress?
    /// `--tunnel-start connect`: the CONNECT's verdict, owed to a tunnel whose 200 went before it.
    var owedVerdict = OwedVerdict.none
    /// Gives up the connection holding the server's answer when the verdict is late
    /// (``EarlyUpstream/escapeDelay(connectTook:)``).
    var escape: (any LoopTimer)?
    /// How long the tunnel's early connection took to open (the escape's measure of the round trip).
    var earlyConnectTook: Int64 = 0
    /// Whether the server has answered the probe's ATS handshake: it is serving the probe, so a
    /// connection of the tunnel's is not what the probe waits behind, and no escape is needed.
    var probeAnswered = false
    /// The ClientHello intercept mode took, and its name's requirements: a page-style block of a
    /// server that refused the proxy's handshake answers the device with them.
    var interceptedHello: (hello: ClientHello, requirements: Requirements)?

    var client: any ByteStream { owner.client }
    var settings: ProxySettings { owner.settings }

    init(
        owner: any TunnelOwner, host: String, port: UInt16, requirements: Requirements, connectApp: AppAgent?,
        capturedDestination: SocketAddress? = nil
    ) {
        self.owner = owner
        self.capturedDestination = capturedDestination
        self.connectApp = connectApp
        self.host = host
        self.port = port
        self.requirements = requirements
        // The requirements say so whatever their scheme: no second policy lookup per CONNECT.
        acceptsCleartext = requirements.cleartextAllowed
    }

    /// The key of the verdict for this tunnel's host and port under `requirements` (for the
    /// ClientHello's `serverName` when it named another host), probed at the captured destination
    /// when there is one.
    func verdictKey(_ requirements: Requirements, serverName: String? = nil) -> VerdictKey {
        VerdictKey(
            host: host, port: port, serverName: serverName, requirements: requirements, address: capturedDestination)
    }

    /// The upstream of the phases that hold one.
    var upstream: (any ByteStream)? {
        switch state {
        case .classifying(let upstream), .relaying(let upstream), .splicing(let upstream, _),
            .helloAhead(let upstream, _):
            upstream
        case .intercepting(let intercepted): intercepted.upstream
        default: nil
        }
    }

    func start() {
        findings.requirements = requirements
        if settings.intercept.mode == .intercept, let service = owner.environment.interceptService {
            if let reason = passthroughReason(for: host, requirements: requirements, service: service) {
                findings.inspect = .passthrough
                findings.passthrough = reason
            } else {
                // The device's ClientHello is needed before anything can be judged: the verdict
                // comes from the proxy's own handshake with the upstream, made after it.
                interceptPlanned = true
                verdictDeferred = true
                return openUpstream(address: nil)
            }
        }
        guard acceptsCleartext else {
            return owner.lookUpVerdict(verdictKey(requirements)) {
                [weak self] progress in self?.probeProgressed(progress)
            }
        }
        // Nothing to judge until a side speaks: a TLS verdict now could only be a false failure
        // for a device that means to speak cleartext, or a server that waits for its client (a
        // local service that answers no ClientHello).
        verdictDeferred = true
        findings.action = .allowed
        openUpstream(address: nil)
    }

    /// Why intercept mode would not intercept `name` (nil: it would): pinned by the policy (the app
    /// rejects any minted leaf), named by `--passthrough`, or its certificate refused by this
    /// device too often.
    func passthroughReason(for name: String, requirements: Requirements, service: InterceptService)
        -> PassthroughReason?
    {
        if requirements.pins != nil { return .pinned }
        if settings.intercept.passesThrough(name) { return .passthroughPattern }
        let pair = ClientRejections.Pair(client: owner.clientAddress, host: name)
        if service.rejections.passesThrough(pair, limit: settings.intercept.rejectionsBeforePassthrough) {
            return .clientRejectedBefore
        }
        return nil
    }

    /// Closes the upstream, if any, and counts what a splicing relay moved; the session closes the
    /// client (and logs the record after this).
    func close() {
        escape?.cancel()
        if case .intercepting(let intercepted) = state { intercepted.close() }
        if case .awaitingVerdict(let early?) = state { early.close() }
        if case .connecting(let early?) = state { early.close() }
        if case .splicing(_, let relay) = state { countSplicedBytes(relay) }
        upstream?.close()
        state = .done
    }

    /// A verdict arrived: for the CONNECT's host, or for the ClientHello's server name (`key` says
    /// which).
    func verdictArrived(_ result: ProbeResult, for key: VerdictKey) {
        if key.serverName == nil, case .owed = owedVerdict { return owedVerdictArrived(result) }
        switch state {
        case .awaitingVerdict, .awaitingServerNameVerdict, .awaitingDeferredVerdict: owner.noteVerdictKnown()
        default: return
        }
        switch state {
        case .awaitingVerdict: connectVerdict(result)
        case .awaitingServerNameVerdict(let name, let named): serverNameVerdict(result, name: name, requirements: named)
        case .awaitingDeferredVerdict: deferredVerdict(result)
        default: return
        }
    }

    // MARK: - The CONNECT's verdict

    /// The CONNECT's own probe is connecting to an address: the tunnel's connection opens alongside,
    /// to the same address (another address tried replaces it); the probe is about to connect
    /// again for its permissive handshake: the tunnel's is given up first.
    private func probeProgressed(_ progress: ProbeProgress) {
        switch progress {
        case .answered:
            probeAnswered = true
            escape?.cancel()
            if case .awaitingVerdict(let early?) = state { early.probeAnswered() }
        case .explaining:
            // The permissive handshake connects again: nothing of the tunnel's may be waiting
            // before it at a server that serves one connection at a time.
            probeAnswered = false
            switch state {
            case .awaitingVerdict(let early):
                early?.close()
                state = .awaitingVerdict(early: nil)
            case .helloAhead: heldAnswerGivenUp()
            case .classifying: if case .owed = owedVerdict { detachBeforeFirstBytes() }
            default: break
            }
        case .connecting(let address):
            guard case .awaitingVerdict(let previous) = state else { return }
            previous?.close()
            let early = EarlyUpstream(
                address: address, host: host, environment: owner.environment, rules: owner.destinations,
                settings: settings)
            state = .awaitingVerdict(early: early)
            if settings.tunnelStart == .atConnect {
                // A verdict that comes first takes the wait over (``openUpstream(address:early:)``).
                early.whenOpen { [unowned self] connection in
                    if let connection { openedBeforeVerdict(connection, early: early) }
                }
            }
        }
    }

    /// `--tunnel-start connect`: the tunnel's connection opened before the verdict, so the 200 goes
    /// now, and the device's first bytes are read as in a tunnel opened before any verdict
    /// (``verdictDeferred``), with the verdict owed.
    private func openedBeforeVerdict(_ connection: any ByteStream, early: EarlyUpstream) {
        guard case .awaitingVerdict = state else { return connection.close() }
        owedVerdict = .owed
        verdictDeferred = true
        earlyConnectTook = early.connectTook
        owner.noteConnected(took: early.connectTook)
        findings.upstreamAddress = early.address.description
        upstreamAddress = early.address
        established(connection)
        // Until the device speaks, a server that serves one connection at a time may be waiting on
        // this one while the probe waits behind it.
        scheduleEscape()
    }

    private func connectVerdict(_ result: ProbeResult) {
        // The early connection serves only the allowed path to the address it dialed; any other
        // outcome closes it unused (nothing was read from it or written to it).
        var early: EarlyUpstream?
        if case .awaitingVerdict(let opened) = state { early = opened }
        state = .awaitingVerdict(early: nil)
        defer { early?.close() }
        if retriedOthersRefusal(result, key: verdictKey(requirements)) { return }
        if let refusal = result.refusal { return owner.deny(refusal) }
        // A cached verdict may come from another client's probe (a loopback client's, which may
        // reach 127.0.0.1): the address it judged must be one this client may reach.
        if let address = result.address, let refusal = owner.destinations.vet(address) {
            return owner.deny(refusal)
        }
        findings.noteProbe(result)
        findings.upstreamAddress = result.address?.description
        if let reason = result.cleartextUpstream {
            // No TLS to judge: the device's own first bytes decide (the `cleartext` rule, or a TLS
            // handshake that would fail against this server).
            inspection.upstreamSpeaksCleartext = reason
            if refusesCleartextUpstream(reason) { return }
            findings.action = .allowed
            return openUpstream(address: result.address, early: early.take())
        }
        guard let observed = result.observed else {
            findings.action = .failed
            let reason = Self.unreachable(result)
            findings.fail(reason)
            let (status, phrase) = Self.status(for: result.upstreamFailure)
            return owner.refuse(
                ProxyResponse.text(
                    status: status, reason: phrase, body: "atsproxy could not reach \(host):\(port): \(reason.text)\n"),
                alert: nil)
        }
        let verdict = settings.policy.verdict(
            for: requirements, observed: observed, atsHandshakeFailure: result.atsHandshakeFailure)
        findings.verdict = verdict
        guard decide(verdict, at: .beforeTunnel).proceeds else {
            findings.action = .blocked
            return owner.refuse(ProxyResponse.blocked(verdict, host: host), alert: .handshakeFailure)
        }
        findings.action = .allowed
        openUpstream(address: result.address, early: early.take())
    }

    /// The probe found a server that does not speak TLS (`reason`: what it sent instead, often a
    /// banner sent before the device said anything). In enforce mode, where the `cleartext` rule
    /// forbids http:// to the host, no tunnel could pass: the device's TLS cannot work with that
    /// server and its cleartext is forbidden. So the CONNECT gets the cleartext verdict at once, a
    /// 403 with the reason, and no byte of the server's reaches the device. Returns whether it did.
    private func refusesCleartextUpstream(_ reason: String) -> Bool {
        guard let http = try? owner.lookUpRequirements(for: host, scheme: .http) else { return false }
        let verdict = settings.policy.verdict(for: http, observed: nil)
        guard !decide(verdict, at: .beforeTunnel).proceeds else { return false }
        findings.requirements = http
        findings.verdict = verdict
        findings.action = .blocked
        findings.fail(FailureReason(.serverNotTLS, "the server does not speak TLS: \(reason)"))
        owner.refuse(ProxyResponse.cleartextServerBlocked(verdict, host: host, reason: reason), alert: nil)
        return true
    }

    /// Connects to the address the verdict was about (by name only when the probe reached none):
    /// through `early` when it dialed that address and did not fail.
    private func openUpstream(address judged: SocketAddress?, early: EarlyUpstream? = nil) {
        // A captured connection goes where the device sent it, whatever the name resolves to.
        let address = judged ?? capturedDestination
        if let early, let address, early.address.description == address.description {
            state = .connecting(early: early)
            return early.whenOpen { [unowned self] connection in
                guard let connection else { return openUpstream(address: address) }
                owner.noteConnected(took: early.connectTook)
                findings.upstreamAddress = address.description
                upstreamAddress = address
                established(connection)
            }
        }
        early?.close()
        state = .connecting(early: nil)
        owner.dial(host: host, port: port, address: address) { [unowned self] result in
            switch result {
            case .success(let (upstream, address)):
                findings.upstreamAddress = address.description
                upstreamAddress = address
                established(upstream)
            case .failure(.refused(let refusal)):
                owner.deny(refusal)
            case .failure(.unreachable(let failure, let timedOut)):
                findings.action = .failed
                findings.fail(FailureReason(failure, timedOut: timedOut))
                owner.refuse(
                    ProxyResponse.text(
                        status: 502, reason: "Bad Gateway", body: "atsproxy could not connect upstream: \(failure)\n"),
                    alert: nil)
            }
        }
    }

    // MARK: - A verdict after the 200

    /// A ClientHello for the CONNECT's own host came through a tunnel opened before any verdict:
    /// judged now, with the upstream given up meanwhile (a server that serves one connection at a
    /// time would otherwise never answer the probe) and the hello held.
    /// - Parameter upstream: the connection held meanwhile, if any (intercept mode's, after its
    ///   handshakes failed, may have none left).
    func judgeDeferred(upstream: (any ByteStream)?) {
        if let upstream, judgesOwedVerdict(upstream: upstream) { return }
        if interceptPlanned, findings.inspect == .intercept {
            // The proxy's own handshakes were refused: the probes explain why, and the verdict
            // decides as in tunnel mode (a report-mode tunnel is relayed unread).
            findings.inspect = .passthrough
        }
        state = .awaitingDeferredVerdict
        client.setReading(false)
        if let upstream { giveUp(upstream) }
        owner.lookUpVerdict(verdictKey(requirements))
    }

    /// Closes an upstream given up while a verdict is taken: what it said or whether it ended is
    /// forgotten with it (the next connection starts afresh).
    func giveUp(_ upstream: any ByteStream) {
        upstream.close()
        inspection.upstreamEnded = false
        inspection.serverScanner = TLSHelloScanner(direction: .serverToClient)
    }

    /// A refusal from a probe that ran for another client (this one joined it in flight) says
    /// nothing of this client, whose own rules decide: where they allow the address, the verdict is
    /// looked up again, once, with them. Returns whether it was.
    private func retriedOthersRefusal(_ result: ProbeResult, key: VerdictKey) -> Bool {
        guard let refusal = result.refusal, !verdictRetried,
            owner.destinations.vet(refusal.destination.address, port: refusal.destination.port) == nil
        else { return false }
        verdictRetried = true
        owner.lookUpVerdict(key)
        return true
    }

    /// The 200 has gone: a refusal can only close the tunnel, before any byte of the device's
    /// handshake reached the server.
    /// - Parameter held: `--tunnel-start connect`'s connection, which carried the device's
    ///   ClientHello (`forwarded` bytes of the client's input) and holds the server's answer: relayed
    ///   when the verdict allows the address it reached, closed unread otherwise.
    func deferredVerdict(_ result: ProbeResult, held: (upstream: any ByteStream, forwarded: Int)? = nil) {
        var held = held
        // Whatever the verdict, the held connection goes unless it is the one relayed.
        defer { if let held { giveUp(held.upstream) } }
        // What a retried lookup's answer (perhaps given at once) finds.
        if held != nil { state = .awaitingDeferredVerdict }
        if retriedOthersRefusal(result, key: verdictKey(requirements)) {
            state = .awaitingDeferredVerdict
            return
        }
        let refusal =
            result.refusal.map(\.destination).flatMap { owner.destinations.vet($0.address, port: $0.port) }
            ?? result.address.flatMap { owner.destinations.vet($0) }
        if let refusal {
            findings.action = .denied
            findings.upstreamAddress = refusal.destination.description
            findings.fail(FailureReason(.destinationDenied, refusal.sentence(client: owner.clientAddress)))
            return owner.finish()
        }
        findings.noteProbe(result)
        findings.upstreamAddress = result.address?.description
        if let reason = result.cleartextUpstream {
            findings.action = .failed
            findings.fail(
                FailureReason(.serverNotTLS, "the device started TLS, but the server does not speak TLS: \(reason)"))
            return owner.finish()
        }
        guard let observed = result.observed else {
            findings.action = .failed
            findings.fail(Self.unreachable(result))
            return owner.finish()
        }
        let verdict = settings.policy.verdict(
            for: requirements, observed: observed, atsHandshakeFailure: result.atsHandshakeFailure)
        findings.verdict = verdict
        let decision = decide(verdict, at: .deviceHandshake(pageAvailable: interceptedHello != nil))
        if !decision.proceeds {
            // Nothing of the server's has reached the device (nor, unless the 200 went at connect,
            // anything of the device's handshake the server); the device's TLS stack reports a
            // failed handshake, as an iPhone app's would.
            findings.action = .blocked
            if decision == .page, let (hello, named) = interceptedHello {
                // Unless intercept mode was asked for a page: its own leaf, then the 403 page.
                findings.inspect = .intercept
                let page = InterceptedTunnel(pageFor: verdict, tunnel: self, hello: hello, requirements: named)
                state = .intercepting(page)
                return page.start()
            }
            return owner.respond(TLSAlertDescription.handshakeFailure.fatalRecord)
        }
        findings.action = .allowed
        if let (upstream, forwarded) = held, result.address?.description == upstreamAddress?.description {
            held = nil
            return relayHeldAnswer(upstream, forwarded: forwarded)
        }
        reconnect(to: result.address)
    }

    // MARK: - The ClientHello's server name

    /// A server name that is another host than the CONNECT's is judged too, by a probe that sends
    /// that name: the certificate must match it, and its own exception rules apply.
    func judgeServerName(_ name: String, requirements named: Requirements, upstream: any ByteStream) {
        state = .awaitingServerNameVerdict(name: name, named)
        client.setReading(false)
        // The upstream connection is given up while the name is probed: a server that serves one
        // connection at a time would otherwise never answer the probe. It is opened again after.
        giveUp(upstream)
        owner.lookUpVerdict(verdictKey(named, serverName: name))
    }

    private func serverNameVerdict(_ result: ProbeResult, name: String, requirements named: Requirements) {
        let key = verdictKey(named, serverName: name)
        if retriedOthersRefusal(result, key: key) { return }
        guard let observed = result.observed else {
            findings.action = result.refusal == nil ? .failed : .denied
            let prefix = "probing the ClientHello's server name \(named.host): "
            // A refusal comes with a connect failure too: the denial is the code that says why.
            let reason: FailureReason =
                if result.refusal != nil {
                    FailureReason(.destinationDenied, prefix + (result.upstreamFailure?.description ?? "no answer"))
                } else if let failure = result.upstreamFailure {
                    FailureReason(failure, prefix: prefix)
                } else if let cleartext = result.cleartextUpstream {
                    FailureReason(.serverNotTLS, prefix + cleartext)
                } else {
                    FailureReason(.upstreamUnreachable, prefix + "no answer")
                }
            findings.fail(reason)
            return owner.finish()
        }
        let verdict = settings.policy.verdict(
            for: named, observed: observed, atsHandshakeFailure: result.atsHandshakeFailure)
        findings.serverNameVerdict = verdict
        if !decide(verdict, at: .deviceHandshake(pageAvailable: false)).proceeds {
            // Nothing of the device's handshake has reached the server.
            findings.action = .blocked
            return owner.respond(TLSAlertDescription.handshakeFailure.fatalRecord)
        }
        findings.action = .allowed
        reconnect(to: result.address)
    }

    /// The CONNECT's answer when no verdict could be reached: 504 when time ran out, 503 when the
    /// proxy made no probe (its limit, or its own resources), 502 for what the upstream did.
    static func status(for failure: ProbeFailure?) -> (Int, String) {
        switch failure {
        case .timeout?, .deadline?: (504, "Gateway Timeout")
        case .probeLimit?, .localResource?: (503, "Service Unavailable")
        default: (502, "Bad Gateway")
        }
    }

    /// What ``ConnectionJudge`` decides for `verdict` at `point`, under the session's settings.
    func decide(_ verdict: Verdict, at point: ConnectionJudge.Point) -> ConnectionJudge.Decision {
        owner.decide(verdict, at: point)
    }

    /// Why a probe reached no verdict: its failure, or that the upstream could not be reached.
    static func unreachable(_ result: ProbeResult) -> FailureReason {
        result.upstreamFailure.map { FailureReason($0) }
            ?? FailureReason(.upstreamUnreachable, "the upstream could not be reached")
    }

    /// Opens the upstream connection again after the server name's probe, then relays: to the
    /// address that probe judged (and the destination rules passed), not to what the name resolves
    /// to now.
    /// - Parameter then: what the new connection is for (relaying, unless said otherwise).
    func reconnect(to address: SocketAddress?, then: ((any ByteStream) -> Void)? = nil) {
        state = .reconnecting
        owner.dial(host: host, port: port, address: address) { [unowned self] result in
            switch result {
            case .success(let (upstream, address)):
                findings.upstreamAddress = address.description
                upstreamAddress = address
                attach(upstream)
                if let then { then(upstream) } else { startRelaying(upstream) }
            case .failure(.refused(let refusal)):
                findings.action = .denied
                findings.fail(FailureReason(.destinationDenied, refusal.description))
                owner.finish()
            case .failure(.unreachable(let failure, let timedOut)):
                findings.action = .failed
                findings.fail(FailureReason(failure, timedOut: timedOut, prefix: "reconnecting upstream: "))
                owner.finish()
            }
        }
    }
}

/// What the passive inspection of a tunnel has found: the device's first bytes as they are
/// scanned, the server's hello as it passes, and each side's end.
struct TunnelInspection {
    /// When the 200 went out (``MonotonicClock``): the device's first bytes are due within the head
    /// timeout of it, however they trickle in.
    var establishedAt: Int64 = 0
    /// Set when the upstream answered the probe in some other protocol than TLS.
    var upstreamSpeaksCleartext: String?
    var clientScanner = TLSHelloScanner(direction: .clientToServer)
    var heldBytesScanned = 0
    /// Nil once the ServerHello is found (or cannot be): then bytes pass without being looked at.
    var serverScanner: TLSHelloScanner? = TLSHelloScanner(direction: .serverToClient)
    var clientEnded = false
    var upstreamEnded = false

    /// The most device bytes held before the ClientHello is found: the largest hello the scanner
    /// reads (what OpenSSL's servers accept) in full records, with room to spare for their headers.
    /// A hello split into so many tiny records that it does not fit is unreadable, so refused.
    static let maximumHeldBytes = 132 * 1024
}

extension Optional where Wrapped == EarlyUpstream {
    /// The early connection, handed on: the caller's deferred close then finds nothing.
    fileprivate mutating func take() -> EarlyUpstream? {
        defer { self = nil }
        return self
    }
}
