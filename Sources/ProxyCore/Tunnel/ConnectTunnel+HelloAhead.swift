import EventLoop

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
            owedVerdict = .arrived(result)
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
            owner.noteVerdictKnown()
            deferredVerdict(result, held: (upstream, 0))
        case .owed:
            sendHelloAhead(upstream)
        }
        return true
    }

    private func sendHelloAhead(_ upstream: any ByteStream) {
        let held = client.peek(maximum: TunnelInspection.maximumHeldBytes)
        client.setReading(false)
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
        guard escape == nil else { return }
        escape = owner.environment.makeTimer { [unowned self] in verdictLateForHeldAnswer() }
        escape?.schedule(after: EarlyUpstream.escapeDelay(connectTook: earlyConnectTook))
    }

    /// The verdict is late and the probe unanswered, or the probe connects again, or the server
    /// broke the connection that carried the hello: it goes,
    /// and the hello goes again on a new one after the verdict.
    private func verdictLateForHeldAnswer() {
        // The server answered the probe too: it is not waiting on this connection, and the verdict
        // is on its way.
        guard !probeAnswered else { return }
        heldAnswerGivenUp()
    }

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
}
