import EventLoop
import LogRecord

/// `--tunnel-start connect`: the 200 goes when the tunnel's own connection opens, before the
/// CONNECT's verdict (``openedBeforeVerdict(_:early:)``), and the device's ClientHello goes to the
/// server while the probe runs. The server's answer is read only to know it came: it waits in the
/// connection until the verdict, so nothing of the server's reaches the device before it. A host's
/// first connection then costs no round trip more than a direct one.
///
/// The device's bytes stay in the client's input until the verdict (they were copied to the
/// server, not moved), so a connection given up meanwhile (an escape, a reset, a verdict about
/// another address) costs only a reconnect that sends them again: the device has had nothing
/// from the server, so its handshake simply starts over there.
extension ConnectTunnel {
    /// The CONNECT's verdict, for a tunnel whose 200 went before it.
    enum OwedVerdict {
        case none
        /// Asked for, not come yet.
        case owed
        /// Came while the device's first bytes were still being read: they decide what it is for.
        case arrived(ProbeResult)
    }

    /// The owed verdict came.
    func owedVerdictArrived(_ result: ProbeResult) {
        switch state {
        case .helloAhead(let upstream, let forwarded):
            owedVerdict = .none
            escape?.cancel()
            owner.noteVerdictKnown()
            deferredVerdict(result, held: (upstream, forwarded))
        case .awaitingDeferredVerdict:
            // The connection that carried the hello was given up meanwhile.
            owedVerdict = .none
            owner.noteVerdictKnown()
            deferredVerdict(result)
        case .classifying:
            owner.noteVerdictKnown()
            owedVerdict = .arrived(result)
            // A verdict with nothing to relay to (no TLS: a server that speaks first, or none
            // reached), or about another address, cannot use the early connection: it is acted on
            // now, without waiting for the device.
            if result.observed == nil || result.address?.description != upstreamAddress?.description {
                detachBeforeFirstBytes()
            }
        case .detached:
            owner.noteVerdictKnown()
            reattach(with: result)
        default:
            // The device's first bytes decided without it: cleartext, an unreadable hello, or a
            // ClientHello for another name, which has its own verdict.
            owedVerdict = .none
        }
    }

    /// A ClientHello for the CONNECT's host in a tunnel owed its verdict: judged at once if the
    /// verdict has come, else sent ahead to the server. Returns false for other tunnels.
    func judgesOwedVerdict(upstream: any ByteStream) -> Bool {
        switch owedVerdict {
        case .none:
            return false
        case .arrived(let result):
            owedVerdict = .none
            client.setReading(false)
            deferredVerdict(result, held: (upstream, 0))
        case .owed:
            sendHelloAhead(upstream)
        }
        return true
    }

    private func sendHelloAhead(_ upstream: any ByteStream) {
        let held = client.peek(maximum: TunnelInspection.maximumHeldBytes)
        client.setReading(false)
        escape?.cancel()  // Until the server answers, it is not waiting on anyone.
        upstream.write(held)
        state = .helloAhead(upstream: upstream, forwarded: held.count)
        upstream.setReading(true)
        if upstream.availableBytes > 0 { serverAnsweredAhead(upstream) }
    }

    /// The server answered the hello sent ahead: its bytes wait, unread, for the verdict, which
    /// has until the escape to come (a server that serves one connection at a time is answering
    /// this one while the probe's waits behind it).
    func serverAnsweredAhead(_ upstream: any ByteStream) {
        upstream.setReading(false)
        scheduleEscape()
    }

    /// Arms the escape (re-arming replaces the pending time), unless the server has answered the
    /// probe: then it is not waiting on the tunnel's connection.
    func scheduleEscape() {
        guard !probeAnswered else { return }
        if escape == nil { escape = owner.environment.makeTimer { [unowned self] in escapeFired() } }
        escape?.schedule(after: EarlyUpstream.escapeDelay(connectTook: earlyConnectTook))
    }

    private func escapeFired() {
        guard !probeAnswered else { return }
        switch state {
        case .classifying: if case .owed = owedVerdict { detachBeforeFirstBytes() }
        case .helloAhead: heldAnswerGivenUp()
        default: break
        }
    }

    /// The verdict is late and the probe unanswered, or the probe connects again, or the server
    /// broke the connection that carried the hello: it goes, and the hello goes again on a new one
    /// after the verdict.
    func heldAnswerGivenUp() {
        guard case .helloAhead(let upstream, _) = state else { return }
        giveUp(upstream)
        state = .awaitingDeferredVerdict
    }

    /// The verdict allows the address the hello went to: what the server answered goes to the
    /// device, and the relay takes over from the bytes the device sent after its hello.
    func relayHeldAnswer(_ upstream: any ByteStream, forwarded: Int) {
        client.discardInput(forwarded)
        findings.bytesUp += Int64(forwarded)
        startRelaying(upstream)
    }

    /// Before the device's first bytes are judged, the early connection goes (an escape, the
    /// permissive probe's connect, the server's end or an error, or a verdict that cannot use it):
    /// the device's bytes wait, unread, for the verdict, then go to a new connection.
    func detachBeforeFirstBytes() {
        guard case .classifying(let upstream) = state else { return }
        escape?.cancel()
        giveUp(upstream)
        client.setReading(false)
        state = .detached
        if case .arrived(let result) = owedVerdict { reattach(with: result) }
    }

    /// With the verdict, a tunnel detached from its early connection opens a new one to the
    /// address the verdict judged, then reads the device's first bytes as before, the verdict
    /// known: a ClientHello is judged by it, cleartext by the `cleartext` rule, and a server that
    /// speaks first (the probe found no TLS) is read as the mode says (``judgesServerFirstBytes``).
    func reattach(with result: ProbeResult) {
        owedVerdict = .arrived(result)
        if let refusal = result.refusal {
            // This session's own probe, under its own rules: the address is one it may not reach.
            findings.action = .denied
            findings.upstreamAddress = refusal.destination.description
            findings.fail(FailureReason(.destinationDenied, refusal.sentence(client: owner.clientAddress)))
            return owner.finish()
        }
        if let reason = result.cleartextUpstream { inspection.upstreamSpeaksCleartext = reason }
        guard result.observed != nil || result.cleartextUpstream != nil, let address = result.address else {
            findings.noteProbe(result)
            findings.action = .failed
            findings.fail(Self.unreachable(result))
            return owner.finish()
        }
        reconnect(to: address) { [unowned self] upstream in
            upstream.setReading(judgesServerFirstBytes)
            state = .classifying(upstream: upstream)
            client.setReading(true)
            classifyHeldBytes()
        }
    }
}
