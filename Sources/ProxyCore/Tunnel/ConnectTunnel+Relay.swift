import ATSPolicy
import EventLoop
import LogRecord
import ProxyWire

/// Relaying: bytes both ways with backpressure, the server's hello read as it passes, and each
/// side's end forwarded as a half-close.
///
/// A relaying tunnel is idle when no byte has moved through either socket, either way, for the idle
/// timeout, and none waits for a reader; then both sides are closed and the log line says so. Bytes
/// waiting for a paused reader keep it open, up to the stall timeout. A half-closed tunnel is judged
/// the same way: the direction still open keeps it alive while its bytes move (a download after the
/// device's FIN), and the ended one neither counts nor is waited for.
extension ConnectTunnel {
    func startRelaying(_ upstream: any ByteStream) {
        state = .relaying(upstream: upstream)
        owner.tunnelOpened()
        client.setTimeouts(read: nil, write: nil)
        owner.watchIdle([client, upstream]) { [unowned self] ending in
            findings.fail(owner.closedReason(ending))
            owner.finish()
        }
        if !inspection.clientEnded { client.setReading(true) }
        relayUp()
        if inspection.clientEnded { forwardEnd(toUpstream: upstream) }
        // The device's bytes are judged: the server may speak now, and what it already sent goes
        // first, then its end if it has ended.
        if !inspection.upstreamEnded { upstream.setReading(true) }
        if upstream.availableBytes > 0 { relayDown() }
        if inspection.upstreamEnded, case .relaying = state { forwardEndToClient() }
    }

    func relayUp() {
        guard case .relaying(let upstream) = state else { return }
        findings.bytesUp += Int64(client.availableBytes)
        client.moveInput(to: upstream)
        Backpressure.apply(source: client, target: upstream) { [unowned self] in !inspection.clientEnded }
        spliceOnceJudged(upstream)
    }

    func relayDown() {
        if case .classifying(let upstream) = state { return upstreamSpokeFirst(upstream) }
        if case .helloAhead(let upstream, _) = state { return serverAnsweredAhead(upstream) }
        guard case .relaying(let upstream) = state else { return }
        if var scanner = inspection.serverScanner {
            switch scanner.feed(upstream.peek()) {
            case .needMoreData:
                inspection.serverScanner = scanner
            case .serverHello(let hello):
                findings.deviceVersion = TLSVersion(wireValue: hello.selectedVersion)
                findings.deviceCipher = CipherSuite(id: hello.cipherSuite)
                inspection.serverScanner = nil
            default:
                inspection.serverScanner = nil
            }
        }
        findings.bytesDown += Int64(upstream.availableBytes)
        upstream.moveInput(to: client)
        // Resumed from ``clientDrained()``: the client's callbacks are the session's.
        if Backpressure.pausesReading(of: upstream, for: client) {
            owner.awaitClientDrained(to: Backpressure.resumeMark)
        }
        spliceOnceJudged(upstream)
    }

    // MARK: - Splicing

    /// Once the server's hello has been read there is nothing more to look at: a tunnel that then
    /// carries bulk (``spliceThreshold`` bytes, either way) moves its bytes with splice(2), kernel to
    /// kernel, as HAProxy moves them, and the proxy copies none. A short exchange (an API call)
    /// never pays for the two pipes and their system calls. (A tunnel with an end already passed on
    /// keeps the copies it has; streams that are not sockets, as in tests, always copy.)
    private func spliceOnceJudged(_ upstream: any ByteStream) {
        guard inspection.serverScanner == nil, !inspection.clientEnded, !inspection.upstreamEnded,
            (findings.bytesUp + findings.bytesDown) >= Self.spliceThreshold,
            let clientSocket = client as? SocketStream, let upstreamSocket = upstream as? SocketStream
        else { return }
        let relay = SpliceRelay(first: clientSocket, second: upstreamSocket)
        state = .splicing(upstream: upstream, relay: relay)
        relay.onEnd = { [unowned self] _, ending in
            // A reset or a refused write ends it as a reset ended the copies: closed, no reason logged.
            if case .failed(let side, let event) = ending, event == .timeout {
                findings.fail(
                    FailureReason(.closedTimeout, "closed: the \(side == .first ? "device" : "server") timed out"))
            }
            owner.finish()
        }
        relay.start()
    }

    /// Bytes relayed after which a judged tunnel splices: past a typical API response, well short of
    /// a download.
    static let spliceThreshold: Int64 = 256 * 1024

    /// Adds what the relay moved to the record (the bytes before it were counted as they were copied).
    func countSplicedBytes(_ relay: SpliceRelay) {
        findings.bytesUp += Int64(relay.bytesToSecond)
        findings.bytesDown += Int64(relay.bytesToFirst)
        relay.close()
    }

    // MARK: - The client, as the session hands it on

    /// The device's bytes: held for classifying, relayed, or intercept mode's handshake.
    func clientReadable() {
        switch state {
        case .classifying: classifyHeldBytes()
        case .relaying: relayUp()
        case .intercepting(let intercepted): intercepted.clientReadable()
        default: return  // Not read until the tunnel is judged or the upstream open.
        }
    }

    /// The client's output drained to the mark asked for: in a relaying tunnel, either the
    /// backpressure on the upstream is lifted, or (once the server has ended) its end is passed on.
    func clientDrained() {
        guard case .relaying(let upstream) = state else { return }
        if inspection.upstreamEnded { return halfClose(client) }
        client.setDrainedMark(0)
        upstream.setReading(true)
    }

    // MARK: - Ends

    func clientEvent(_ event: StreamEvent) {
        // During intercept mode's handshake with the device, its events are the handshake's.
        if case .intercepting(let intercepted) = state, intercepted.handlesClientEvents {
            return intercepted.clientEvent(event)
        }
        // Only the device's deadline for its first bytes sets a limit on the client here.
        if event == .timeout, case .classifying = state { return firstBytesTimedOut() }
        guard event == .endOfStream else { return owner.finish() }
        inspection.clientEnded = true
        client.setReading(false)
        switch state {
        case .classifying: classifyHeldBytes()
        case .relaying(let upstream): forwardEnd(toUpstream: upstream)
        default: return  // The end is forwarded when relaying starts.
        }
    }

    func upstreamEvent(_ event: StreamEvent) {
        // A connection that carried the hello ahead and broke, or ended without a word, is of no
        // use: the hello goes again on a new one after the verdict. (An answer and then an end, an
        // alert and a close, are the server's to relay.)
        if case .helloAhead(let upstream, _) = state, event != .endOfStream || upstream.availableBytes == 0 {
            return heldAnswerGivenUp()
        }
        // Connect mode, the verdict owed: a connection that ended before the device spoke is of no
        // use to it; a new one is opened after the verdict.
        if case .classifying = state, case .owed = owedVerdict { return detachBeforeFirstBytes() }
        guard event == .endOfStream, let upstream else { return owner.finish() }
        inspection.upstreamEnded = true
        upstream.setReading(false)
        // Before the device's bytes are judged, the server's end waits like its bytes: it is passed
        // on after them, once relaying starts.
        guard case .relaying = state else { return }
        forwardEndToClient()
    }

    /// Half-closes the upstream once what is queued for it is written; the session ends when both
    /// directions have ended and everything is delivered.
    private func forwardEnd(toUpstream upstream: any ByteStream) {
        guard upstream.pendingOutputBytes > 0 else { return halfClose(upstream) }
        upstream.setDrainedMark(0)
        upstream.onDrained = { [unowned self] upstream in
            upstream.onDrained = nil
            halfClose(upstream)
        }
    }

    /// The server's end, passed on to the device once what is queued for it is written (then
    /// ``clientDrained()`` half-closes it).
    private func forwardEndToClient() {
        guard client.pendingOutputBytes > 0 else { return halfClose(client) }
        owner.awaitClientDrained(to: 0)
    }

    /// Sends `target` our end, or, when that was the tunnel's last open direction, ends the session:
    /// closing the sockets sends each FIN, and a shutdown(2) just before the close would be a system
    /// call (and a loopback round through the peer's TCP input) for nothing.
    private func halfClose(_ target: any ByteStream) {
        guard !isDone else { return owner.finish() }
        target.shutdownWrite()
    }

    /// Both directions ended and everything delivered.
    private var isDone: Bool {
        inspection.clientEnded && inspection.upstreamEnded && client.pendingOutputBytes == 0
            && (upstream?.pendingOutputBytes ?? 0) == 0
    }
}
