import ATSPolicy
import EventLoop
import ProxyWire
import TLSInspection

/// Where a CONNECT session is, and what the passive inspection of its tunnel has found.
struct TunnelState {
    enum Phase {
        case idle
        case awaitingVerdict
        case connectingUpstream
        /// 200 sent; the device's first bytes are held until they show TLS or cleartext.
        case classifying
        /// The ClientHello named another host; its verdict is pending and the bytes are still held.
        case awaitingServerNameVerdict(Requirements)
        case relaying
    }

    var phase = Phase.idle
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

/// The tunnel: the device's first bytes are classified (a ClientHello, whose server name may need a
/// verdict of its own, or cleartext, judged by the `cleartext` rule) before any reach the server,
/// and nothing is read from the server until they are: a server that speaks first (an SSH or SMTP
/// banner) gets no byte to the device before the device's own bytes are judged. Bytes that look
/// like TLS but hold no ClientHello the proxy can read fail closed: blocked in enforce mode (a
/// fatal alert, then the close), relayed in report mode, logged non-compliant either way with the
/// reason in `hello_unreadable`. The server's hello is read as it passes. Then bytes are relayed both ways with backpressure, and
/// each side's end is forwarded as a half-close.
///
/// A relaying tunnel is idle when no byte has moved through either socket, either way, for the idle
/// timeout, and none waits for a reader; then both sides are closed and the log line says so. Bytes
/// waiting for a paused reader keep it open, up to the stall timeout. A half-closed tunnel is judged the
/// same way: the direction still open keeps it alive while its bytes move (a download after the
/// device's FIN), and the ended one neither counts nor is waited for.
extension ClientSession {
    func tunnelEstablished() {
        guard let upstream else { return }
        client.write(ProxyResponse.connectionEstablished)
        // The device's first bytes (its ClientHello) are due as promptly as a request head.
        tunnel.establishedAt = MonotonicClock.nowMilliseconds()
        client.setTimeouts(read: settings.headTimeout, write: settings.idleTimeout)
        // Whatever the server sends waits in its socket until the device's bytes are judged.
        upstream.setReading(false)
        attachUpstream(upstream)
        tunnel.phase = .classifying
        client.onReadable = { [unowned self] _ in clientBytesArrived() }
        client.onEvent = { [unowned self] _, event in clientEvent(event) }
        client.setReading(true)
        // Bytes sent right behind the CONNECT head are already buffered.
        if client.availableBytes > 0 { classifyHeldBytes() }
    }

    /// The upstream's own limits are off: until relaying starts the device's deadline bounds the
    /// tunnel, then the idle timer watches both sides together.
    private func attachUpstream(_ upstream: any ByteStream) {
        upstream.setTimeouts(read: nil, write: nil)
        upstream.onReadable = { [unowned self] _ in relayDown() }
        upstream.onEvent = { [unowned self] _, event in upstreamEvent(event) }
    }

    private func clientBytesArrived() {
        switch tunnel.phase {
        case .classifying: classifyHeldBytes()
        case .relaying: relayUp()
        default: return
        }
    }

    /// The probe found a server that does not speak TLS (`reason`: what it sent instead, often a
    /// banner sent before the device said anything). In enforce mode, where the `cleartext` rule
    /// forbids http:// to the host, no tunnel could pass: the device's TLS cannot work with that
    /// server and its cleartext is forbidden. So the CONNECT gets the cleartext verdict at once, a
    /// 403 with the reason, and no byte of the server's reaches the device. Returns whether it did.
    func refusesCleartextUpstream(_ reason: String) -> Bool {
        guard settings.mode == .enforce, let target,
            let http = try? lookUpRequirements(for: target.host, scheme: .http)
        else { return false }
        let verdict = settings.policy.verdict(for: http, observed: nil)
        guard !verdict.isCompliant else { return false }
        record?.requirements = http
        record?.verdict = verdict
        record?.action = .blocked
        record?.upstreamError = "the server does not speak TLS: \(reason)"
        respond(ProxyResponse.cleartextServerBlocked(verdict, host: target.host, reason: reason))
        return true
    }

    // MARK: - The device's first bytes

    private func classifyHeldBytes() {
        let held = client.peek(maximum: TunnelState.maximumHeldBytes)
        var state = tunnel.clientScanner.feed(held.dropFirst(tunnel.heldBytesScanned))
        tunnel.heldBytesScanned = held.count
        if state == .needMoreData, tunnel.clientEnded {
            state = tunnel.clientScanner.finish()
        }
        if state == .needMoreData, held.count >= TunnelState.maximumHeldBytes {
            return helloUnreadable(
                "no complete ClientHello in the first \(TunnelState.maximumHeldBytes) bytes", alert: .decodeError)
        }
        switch state {
        case .needMoreData:
            awaitMoreHeldBytes()
        case .notTLS:
            // A device that got its 200 and hung up without a word sent nothing to judge.
            if held.isEmpty { return finish() }
            cleartextInTunnel(firstBytes: held)
        case .clientHello(let hello):
            clientHelloSeen(hello)
        case .failed(let reason):
            helloUnreadable(reason, alert: tunnel.clientScanner.failureAlert ?? .decodeError)
        case .serverHello:
            startRelaying()  // Not reported in this direction.
        }
    }

    /// Waits for the rest of the device's first bytes until what is left of their deadline.
    private func awaitMoreHeldBytes() {
        guard !tunnel.clientEnded else { return }
        let left = settings.headTimeout.milliseconds - (MonotonicClock.nowMilliseconds() - tunnel.establishedAt)
        guard left > 0 else { return firstBytesTimedOut() }
        client.setTimeouts(read: .milliseconds(left), write: settings.idleTimeout)
    }

    private func firstBytesTimedOut() {
        // Bytes held at the deadline began a ClientHello (anything else is decided at its first byte).
        if client.availableBytes > 0 {
            return helloUnreadable(
                "the ClientHello was not complete within \(settings.headTimeout.logText)", alert: .decodeError)
        }
        var reason = "closed: the device sent no ClientHello or request within \(settings.headTimeout.logText)"
        if tunnel.upstreamSpeaksCleartext != nil {
            reason += " (the server speaks first; what it sent waits until the device's first bytes are judged)"
        }
        record?.upstreamError = reason
        finish()
    }

    /// The device's bytes look like TLS but hold no ClientHello the proxy can read, so there is
    /// nothing to judge: the server's name, the device's offer and the server's own verdict are all
    /// unknown for this connection. Fails closed: in enforce mode nothing reaches the server, and the
    /// device gets the fatal `alert` a TLS server would send for the fault (there is no way to say
    /// 403 inside TLS), then the close. In report mode the bytes are relayed. Logged non-compliant
    /// either way, with `reason` as `hello_unreadable`.
    private func helloUnreadable(_ reason: String, alert: TLSAlertDescription) {
        record?.tunnelProtocol = .tls
        record?.helloUnreadable = reason
        guard settings.mode == .report else {
            record?.action = .blocked
            return respond(alert.fatalRecord)
        }
        record?.action = .allowed
        startRelaying()
    }

    /// The device speaks cleartext through the tunnel: what ATS decides for http:// to this host.
    private func cleartextInTunnel(firstBytes: [UInt8]) {
        guard let target, let requirements = try? lookUpRequirements(for: target.host, scheme: .http) else {
            return finish()
        }
        record?.tunnelProtocol = .cleartext
        record?.scheme = .http
        let verdict = settings.policy.verdict(for: requirements, observed: nil)
        record?.requirements = requirements
        record?.verdict = verdict
        guard verdict.isCompliant || settings.mode == .report else {
            record?.action = .blocked
            // An HTTP request gets Apple's words for it; other protocols are just cut off.
            guard RequestLineDetection.startsWithRequestLine(firstBytes.prefix(8192)) else { return finish() }
            return respond(ProxyResponse.cleartextBlocked(verdict, host: target.host))
        }
        record?.action = .allowed
        startRelaying()
    }

    private func clientHelloSeen(_ hello: ClientHello) {
        record?.tunnelProtocol = .tls
        record?.serverNameIndication = hello.serverName
        if let reason = tunnel.upstreamSpeaksCleartext {
            record?.action = .failed
            record?.upstreamError = "the device started TLS, but the server does not speak TLS: \(reason)"
            return finish()
        }
        // A server name that is another host than the CONNECT's is judged too, by a probe that
        // sends that name: the certificate must match it, and its own exception rules apply.
        // (The usual case, the CONNECT's own name, needs no second policy lookup.)
        guard let name = hello.serverName, let target, name != target.host, let requirements,
            let named = try? lookUpRequirements(for: name, scheme: .https), named.host != requirements.host
        else { return startRelaying() }
        tunnel.phase = .awaitingServerNameVerdict(named)
        client.setReading(false)
        // The upstream connection is given up while the name is probed: a server that serves one
        // connection at a time would otherwise never answer the probe. It is opened again after.
        upstream?.close()
        upstream = nil
        lookUpVerdict(VerdictKey(host: target.host, port: target.port, serverName: name, requirements: named))
    }

    func serverNameVerdict(_ report: ProbeReport, requirements: Requirements) {
        guard let observed = report.observed else {
            record?.action = .failed
            record?.upstreamError = "probing the ClientHello's server name \(requirements.host): "
                + (report.upstreamFailure?.description ?? report.cleartextUpstream ?? "no answer")
            return finish()
        }
        let verdict = settings.policy.verdict(
            for: requirements, observed: observed, atsHandshakeFailure: report.atsHandshakeFailure)
        record?.serverNameVerdict = verdict
        if !verdict.isCompliant, settings.mode == .enforce {
            // Nothing of the device's handshake has reached the server.
            record?.action = .blocked
            return finish()
        }
        reconnectUpstream(to: report.address)
    }

    /// Opens the upstream connection again after the server name's probe, then relays: to the
    /// address that probe judged (and the destination rules passed), not to what the name resolves
    /// to now.
    private func reconnectUpstream(to address: SocketAddress?) {
        guard let target else { return finish() }
        dial(host: target.host, port: target.port, address: address) { [unowned self] result in
            switch result {
            case .success(let (upstream, _)):
                self.upstream = upstream
                attachUpstream(upstream)
                startRelaying()
            case .failure(.refused(let refusal)):
                record?.action = .denied
                record?.upstreamError = refusal.description
                finish()
            case .failure(.unreachable(let failure, _)):
                record?.action = .failed
                record?.upstreamError = "reconnecting upstream: \(failure)"
                finish()
            }
        }
    }

    private func startRelaying() {
        tunnel.phase = .relaying
        client.setTimeouts(read: nil, write: nil)
        if let upstream {
            watchIdle([client, upstream]) { [unowned self] ending in
                record?.upstreamError = closedReason(ending)
                finish()
            }
        }
        if !tunnel.clientEnded { client.setReading(true) }
        relayUp()
        if tunnel.clientEnded, let upstream { forwardEnd(to: upstream) }
        // The device's bytes are judged: the server may speak now, and what it already sent goes first.
        guard let upstream else { return }
        if !tunnel.upstreamEnded { upstream.setReading(true) }
        if upstream.availableBytes > 0 { relayDown() }
    }

    // MARK: - Relaying

    private func relayUp() {
        guard let upstream else { return }
        record?.bytesUp += Int64(client.availableBytes)
        client.moveInput(to: upstream)
        Backpressure.apply(source: client, target: upstream) { [unowned self] in !tunnel.clientEnded }
    }

    private func relayDown() {
        guard let upstream else { return }
        if tunnel.serverScanner != nil {
            switch tunnel.serverScanner!.feed(upstream.peek()) {
            case .needMoreData:
                break
            case .serverHello(let hello):
                record?.deviceVersion = TLSVersion(wireValue: hello.selectedVersion)
                record?.deviceCipher = CipherSuite(id: hello.cipherSuite)
                tunnel.serverScanner = nil
            default:
                tunnel.serverScanner = nil
            }
        }
        record?.bytesDown += Int64(upstream.availableBytes)
        upstream.moveInput(to: client)
        Backpressure.apply(source: upstream, target: client) { [unowned self] in !tunnel.upstreamEnded }
    }

    // MARK: - Ends

    private func clientEvent(_ event: ConnectionEvent) {
        // Only the device's deadline for its first bytes sets a limit on the client here.
        if event == .timeout, case .classifying = tunnel.phase { return firstBytesTimedOut() }
        guard event == .endOfStream else { return finish() }
        tunnel.clientEnded = true
        client.setReading(false)
        switch tunnel.phase {
        case .classifying: classifyHeldBytes()
        case .relaying: if let upstream { forwardEnd(to: upstream) }
        default: return  // The end is forwarded when relaying starts.
        }
    }

    private func upstreamEvent(_ event: ConnectionEvent) {
        guard event == .endOfStream, let upstream else { return finish() }
        tunnel.upstreamEnded = true
        upstream.setReading(false)
        forwardEnd(to: client)
    }

    /// Half-closes `target` once what is queued for it is written; the session ends when both
    /// directions have ended and everything is delivered.
    private func forwardEnd(to target: any ByteStream) {
        guard target.pendingOutputBytes > 0 else { return halfClose(target) }
        target.setDrainedMark(0)
        target.onDrained = { [unowned self] target in
            target.onDrained = nil
            halfClose(target)
        }
    }

    /// Sends `target` our end, or, when that was the tunnel's last open direction, ends the session:
    /// closing the sockets sends each FIN, and a shutdown(2) just before the close would be a system
    /// call (and a loopback round through the peer's TCP input) for nothing.
    private func halfClose(_ target: any ByteStream) {
        guard !isTunnelDone else { return finish() }
        target.shutdownWrite()
    }

    /// Both directions ended and everything delivered.
    private var isTunnelDone: Bool {
        tunnel.clientEnded && tunnel.upstreamEnded && client.pendingOutputBytes == 0
            && (upstream?.pendingOutputBytes ?? 0) == 0
    }
}
