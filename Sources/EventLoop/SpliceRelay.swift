internal import CLibevent
import Glibc

/// Moves the bytes of two open ``SocketStream``s both ways with `splice(2)`, socket → pipe → socket,
/// so that they never enter user space: a judged tunnel then costs the proxy a few system calls per
/// 64 KiB and no memory of its own. As HAProxy does (`raw_sock_to_pipe`, `raw_sock_from_pipe`).
///
/// Contract:
/// - ``start()`` takes over both connections: their reading, and their ``SocketStream/onReadable``,
///   ``SocketStream/onDrained`` and ``SocketStream/onEvent`` callbacks, until the relay ends. Bytes
///   already in a connection's input, and bytes already queued in the other's output, are delivered
///   first, in order: nothing is spliced to a socket until its output buffer has drained.
/// - Backpressure: a direction reads its source only while its pipe has room. A pipe full of bytes
///   its destination will not take stops the reading, so a slow reader never makes memory grow;
///   those bytes count as waiting (``SocketStream/hasBytesWaiting``) for the idle timer's stall check.
/// - Half-close: an end of stream from one side is passed on as `shutdown(SHUT_WR)` on the other
///   once everything before it has been delivered; the other direction goes on.
/// - ``onEnd`` runs once, from the loop, never from inside a method of this class or of the
///   connections: `.finished` when both directions have ended and been passed on, `.failed` on the
///   first error (a reset, a refused write, a connection's timeout), naming the side it came from.
///   The relay has stopped by then; the owner closes the connections.
/// - Where the kernel refuses to splice a socket (EINVAL, ENOSYS: a socket type without splice
///   support), that direction falls back to the connections' own evbuffer copies, after handing on
///   what the pipe already held. So does every direction when no pipe could be made.
/// - ``SocketStream/lastActivity`` is kept up to date for both connections, and the byte counters
///   (``bytesToSecond``, ``bytesToFirst``) count what each direction delivered, the bytes that were
///   buffered at the start included.
/// - SIGPIPE must be ignored by the process (the daemon does): a splice into a socket whose peer has
///   gone cannot ask for MSG_NOSIGNAL.
///
/// Loop-confined. The single owner of its pipes and of its events (a read event on each source and
/// a write event on each destination, beside the connections' own, and a notice event), all freed
/// in ``close()`` and only there: when the relay ends, when its owner closes it, or when either
/// connection is closed under it. The C callbacks' context is retained from ``start()`` until then.
package final class SpliceRelay {
    /// Which connection something happened to.
    package enum Side: Sendable, Equatable {
        case first, second
    }

    /// How the relay ended.
    package enum Ending: Sendable, Equatable {
        /// Both directions ended, and each end was passed on.
        case finished
        /// A socket error or a time limit on `side`.
        case failed(Side, StreamEvent)
    }

    /// How the bytes move.
    package enum Method: Sendable, Equatable {
        /// splice(2) through a pipe, falling back to copies where the kernel refuses.
        case splice
        /// The connections' evbuffer copies (``SocketStream/moveInput(to:)``), as the fallback does.
        case copy
    }

    /// Each direction's pipe size unless told otherwise (``SplicePipe/defaultCapacity``).
    package static var defaultPipeCapacity: Int { SplicePipe.defaultCapacity }

    /// What a bulk direction's pipe grows to unless told otherwise (``SplicePipe/grownCapacity``).
    package static var defaultGrownPipeCapacity: Int { SplicePipe.grownCapacity }

    package let first: SocketStream
    package let second: SocketStream
    /// Runs once when the relay ends (see the type's contract).
    package var onEnd: ((SpliceRelay, Ending) -> Void)?

    let base: EventBase
    let requestedMethod: Method
    /// For tests: each direction acts as if the kernel refused to splice into its target (EINVAL)
    /// once it has delivered this many bytes, with bytes still in its pipe.
    var refusesSplicingAfter: Int?
    let pipeCapacity: Int
    /// What a direction's pipe grows to once it is filled to its capacity (no growth when not
    /// above ``pipeCapacity``), within the process-wide ``SplicePipe/growthBudget``.
    let grownPipeCapacity: Int
    /// first → second, then second → first.
    private(set) var flows: [SpliceFlow] = []
    private var noticeEvent: OpaquePointer?
    private var retainedForCallbacks: Unmanaged<SpliceRelay>?
    private var started = false
    private(set) var closed = false
    private var kickDue = false
    private var ending: Ending?

    /// - Parameters:
    ///   - method: `.copy` skips splicing (the fallback, forced: for tests and comparisons).
    ///   - pipeCapacity: each direction's pipe size at first (F_SETPIPE_SZ).
    ///   - grownPipeCapacity: what a direction's pipe grows to the first time the source fills it
    ///     (a bulk transfer), while all grown pipes of the process stay within
    ///     ``SplicePipe/growthBudget``; at or below `pipeCapacity`, pipes keep their size.
    package init(
        first: SocketStream, second: SocketStream, method: Method = .splice,
        pipeCapacity: Int = SpliceRelay.defaultPipeCapacity,
        grownPipeCapacity: Int = SpliceRelay.defaultGrownPipeCapacity
    ) {
        self.first = first
        self.second = second
        base = first.base
        requestedMethod = method
        self.pipeCapacity = pipeCapacity
        self.grownPipeCapacity = grownPipeCapacity
    }

    deinit {
        precondition(retainedForCallbacks == nil, "a started SpliceRelay must be closed before it is released")
    }

    /// Bytes delivered from the first connection to the second (a tunnel's bytes up, with the
    /// client first).
    package var bytesToSecond: Int { flows.first?.moved ?? 0 }
    /// Bytes delivered from the second connection to the first.
    package var bytesToFirst: Int { flows.last?.moved ?? 0 }

    /// Whether each direction splices (false: it copies, by request or by fallback), first → second
    /// then second → first; empty before ``start()``.
    package var splicing: [Bool] { flows.map { $0.pipe != nil } }

    /// Whether it has ended or been closed.
    package var isClosed: Bool { closed }

    /// Takes over both connections and starts moving bytes. Both must be open (connected).
    package func start() {
        guard !started, !closed else { return }
        started = true
        let context = Unmanaged.passRetained(self)
        retainedForCallbacks = context
        noticeEvent = event_new(base.raw, -1, 0, relayNoticeCallback, context.toOpaque())
        first.relay = self
        second.relay = self
        for connection in [first, second] {
            connection.onReadable = { [weak self] connection in self?.flow(from: connection)?.readable() }
            connection.onDrained = { [weak self] connection in self?.flow(to: connection)?.drained() }
            connection.onEvent = { [weak self] connection, event in self?.connection(connection, reported: event) }
        }
        flows = [
            SpliceFlow(relay: self, source: first, target: second),
            SpliceFlow(relay: self, source: second, target: first),
        ]
        for flow in flows { flow.start(splicing: requestedMethod == .splice) }
        // What the start found (an end already read, a pipe to fill) is acted on from the loop.
        kickDue = true
        notify()
    }

    /// Stops moving bytes and frees the pipes and events, without calling ``onEnd``. The
    /// connections stay open, with no callbacks and reading off. Idempotent.
    package func close() {
        guard !closed else { return }
        closed = true
        onEnd = nil
        for flow in flows { flow.stop() }
        if let noticeEvent { event_free(noticeEvent) }
        noticeEvent = nil
        for connection in [first, second] where connection.relay === self {
            connection.relay = nil
            connection.onReadable = nil
            connection.onDrained = nil
            connection.onEvent = nil
            connection.setReading(false)
        }
        let retained = retainedForCallbacks
        retainedForCallbacks = nil
        retained?.release()
    }

    /// One of the connections is closing under the relay: its events must leave the socket first.
    func connectionClosing() { close() }

    func side(of connection: any ByteStream) -> Side { connection === first ? .first : .second }

    private func flow(from source: any ByteStream) -> SpliceFlow? { flows.first { $0.source === source } }
    private func flow(to target: any ByteStream) -> SpliceFlow? { flows.first { $0.target === target } }

    private func connection(_ connection: any ByteStream, reported event: StreamEvent) {
        switch event {
        case .connected: return
        case .endOfStream: flow(from: connection)?.sourceEnded()
        case .error, .timeout: fail(side(of: connection), event)
        }
    }

    // MARK: - Ending

    /// A direction passed its end on: the relay is done once both have.
    func flowFinished() {
        guard ending == nil, flows.allSatisfy(\.finished) else { return }
        ending = .finished
        notify()
    }

    /// The first failure ends the relay: nothing more moves, and it is reported from the loop.
    func fail(_ side: Side, _ event: StreamEvent) {
        guard ending == nil, !closed else { return }
        ending = .failed(side, event)
        for flow in flows { flow.stop() }
        notify()
    }

    private func notify() {
        if let noticeEvent { event_active(noticeEvent, Int32(EV_TIMEOUT), 0) }
    }

    fileprivate func deliverNotice() {
        guard !closed else { return }
        if kickDue, ending == nil {
            kickDue = false
            for flow in flows { flow.pump() }
        }
        guard let ending else { return }
        let onEnd = self.onEnd
        close()
        onEnd?(self, ending)
    }
}

private func relayNoticeCallback(_ descriptor: Int32, _ what: Int16, _ context: UnsafeMutableRawPointer?) {
    guard let context else { return }
    let relay = Unmanaged<SpliceRelay>.fromOpaque(context).takeUnretainedValue()
    withExtendedLifetime(relay) { relay.deliverNotice() }
}
