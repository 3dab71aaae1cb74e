internal import CLibevent
import Glibc

/// One direction of a ``SpliceRelay``: source socket → pipe → target socket, or, on the fallback,
/// the source's input evbuffer → the target's output evbuffer. Owned by its relay, which frees
/// everything through ``stop()``; its events' context is this object, unretained (the relay keeps
/// it alive until the events are freed).
final class SpliceFlow {
    unowned let relay: SpliceRelay
    let source: SocketStream
    let target: SocketStream
    /// Nil on the copy path (by request, by fallback, or once stopped).
    private(set) var pipe: SplicePipe?
    /// Bytes in the pipe.
    private var inPipe = 0
    /// Bytes handed on to the target (spliced out of the pipe, or moved to its output buffer).
    private(set) var moved = 0
    /// The source's end of stream has been read.
    private var sourceDone = false
    /// The end was passed on (the target shut for writing): this direction is over.
    private(set) var finished = false
    /// The target's output buffer still holds bytes from before the relay: nothing is spliced to
    /// the target until it drains.
    private var flushing = false
    /// A splice into the pipe found no room while it held bytes (a pipe counts buffers, not bytes,
    /// so it can be full below its capacity): no reading until the pipe is empty again.
    private var pipeFull = false
    /// The pipe was filled to its capacity once and asked to grow (``SplicePipe/grow(to:)``).
    private var growthTried = false
    private var stopped = false
    private var readEvent: OpaquePointer?
    private var writeEvent: OpaquePointer?
    private var readArmed = false
    private var writeArmed = false

    /// The copy path stops reading the source once the target's output holds this much, and reads
    /// again once it is down to ``copyLowWater`` (the relay's existing backpressure, from ProxyCore).
    static let copyHighWater = 256 * 1024
    static let copyLowWater = 64 * 1024

    init(relay: SpliceRelay, source: SocketStream, target: SocketStream) {
        self.relay = relay
        self.source = source
        self.target = target
    }

    /// Moves what is buffered already, then sets up the pipe and events (or the copy path).
    func start(splicing: Bool) {
        source.setReading(false)
        let buffered = source.availableBytes
        if buffered > 0 {
            moved += buffered
            source.moveInput(to: target)
        }
        sourceDone = source.inputEnded
        // Queued bytes may not have been written yet (``SocketStream/queue(_:)`` waits for a flush).
        target.flush()
        flushing = target.pendingOutputBytes > 0
        if flushing { target.setDrainedMark(0) }
        // No pipe (out of descriptors, say) is no reason to fail the tunnel: it copies instead.
        let context = Unmanaged.passUnretained(self).toOpaque()
        guard splicing, source.socket >= 0, target.socket >= 0, let pipe = try? SplicePipe(capacity: relay.pipeCapacity)
        else {
            return startCopying()
        }
        self.pipe = pipe
        readEvent = event_new(relay.base.raw, source.socket, Int16(EV_READ | EV_PERSIST), flowReadCallback, context)
        writeEvent = event_new(relay.base.raw, target.socket, Int16(EV_WRITE | EV_PERSIST), flowWriteCallback, context)
        if readEvent == nil || writeEvent == nil { startCopying() }
    }

    /// Frees the events and the pipe; nothing more moves. Idempotent.
    func stop() {
        guard !stopped else { return }
        stopped = true
        for event in [readEvent, writeEvent] { if let event { event_free(event) } }
        readEvent = nil
        writeEvent = nil
        readArmed = false
        writeArmed = false
        pipe = nil  // SplicePipe closes its descriptors.
        inPipe = 0
        target.splicedBytesWaiting = 0
        source.setReading(false)
    }

    // MARK: - Splicing

    /// Fills the pipe from the source while it has room, empties it into the target while the target
    /// takes bytes, passes an end on once the pipe is empty, and arms the events for what is left.
    func pump() {
        guard !stopped, let pipe else { return }
        var now: Int64?
        if !sourceDone, !pipeFull {
            let before = inPipe
            guard fill(pipe) else { return }
            if inPipe > before {
                now = MonotonicClock.nowMilliseconds()
                source.lastActivity = now!
            }
        }
        if !flushing, inPipe > 0 {
            let before = inPipe
            guard drain(pipe) else { return }
            if inPipe < before { target.lastActivity = now ?? MonotonicClock.nowMilliseconds() }
        }
        target.splicedBytesWaiting = inPipe
        if inPipe == 0 { pipeFull = false }
        if sourceDone, inPipe == 0, !flushing { return passEndOn() }
        setRead(!sourceDone && !pipeFull && inPipe < pipe.capacity)
        setWrite(!flushing && inPipe > 0)
    }

    /// Splices from the source until it has nothing more, the pipe is full, or its end is read.
    /// False when the flow stopped or went to the copy path.
    private func fill(_ pipe: SplicePipe) -> Bool {
        while inPipe < pipe.capacity {
            let count = SplicePipe.move(from: source.socket, to: pipe.writeEnd, length: pipe.capacity - inPipe)
            if count > 0 {
                inPipe += count
                continue
            }
            if count == 0 {
                sourceDone = true
                return true
            }
            switch errno {
            case EINTR: continue
            case EAGAIN:
                // Nothing more to read, or no room left: HAProxy cannot tell them apart either, and
                // stops reading until the pipe is empty when it holds bytes.
                if inPipe > 0 { pipeFull = true }
                return true
            case EINVAL, ENOSYS, EOPNOTSUPP:
                startCopying()
                return false
            case let code:
                relay.fail(relay.side(of: source), .error(code))
                return false
            }
        }
        // Filled to the brim: a bulk transfer. Its pipe grows once, when the budget allows, and the
        // filling goes on; a short exchange (a handshake, a request) never fills 64 KiB.
        if !growthTried, relay.grownPipeCapacity > pipe.capacity {
            growthTried = true
            if pipe.grow(to: relay.grownPipeCapacity) { return fill(pipe) }
        }
        return true
    }

    /// Splices from the pipe into the target until it is empty or the target takes no more. False
    /// when the flow stopped or went to the copy path.
    private func drain(_ pipe: SplicePipe) -> Bool {
        if let limit = relay.refusesSplicingAfter, moved >= limit {
            startCopying()
            return false
        }
        while inPipe > 0 {
            let count = SplicePipe.move(from: pipe.readEnd, to: target.socket, length: inPipe)
            if count > 0 {
                inPipe -= count
                moved += count
                continue
            }
            switch count == 0 ? EAGAIN : errno {
            case EINTR: continue
            case EAGAIN: return true
            case EINVAL, ENOSYS, EOPNOTSUPP:
                startCopying()
                return false
            case let code:
                relay.fail(relay.side(of: target), .error(code))
                return false
            }
        }
        return true
    }

    private func passEndOn() {
        setRead(false)
        setWrite(false)
        guard !finished else { return }
        finished = true
        target.shutdownWrite()
        relay.flowFinished()
    }

    private func setRead(_ on: Bool) {
        guard on != readArmed, let readEvent else { return }
        readArmed = on
        if on { event_add(readEvent, nil) } else { event_del(readEvent) }
    }

    private func setWrite(_ on: Bool) {
        guard on != writeArmed, let writeEvent else { return }
        writeArmed = on
        if on { event_add(writeEvent, nil) } else { event_del(writeEvent) }
    }

    // MARK: - The connections' callbacks (from the loop)

    /// The target's output drained (the bytes from before the relay, or the copy path's).
    func drained() {
        guard !stopped else { return }
        if pipe != nil {
            flushing = false
            return pump()
        }
        copyDrained()
    }

    /// The source's end of stream, read by the connection itself (the copy path).
    func sourceEnded() {
        guard !stopped else { return }
        sourceDone = true
        if pipe != nil { return pump() }
        copyDrained()
    }

    // MARK: - Copying (requested, or the fallback)

    /// Hands on what the pipe holds (it goes first), frees the pipe and events, and lets the
    /// connections move the bytes through their buffers from here on.
    private func startCopying() {
        if let pipe, inPipe > 0 {
            withUnsafeTemporaryAllocation(byteCount: 65_536, alignment: 16) { buffer in
                while inPipe > 0 {
                    let count = pipe.drain(into: buffer)
                    guard count > 0 else { break }
                    target.queue(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                    inPipe -= count
                    moved += count
                }
            }
            target.flush()
        }
        for event in [readEvent, writeEvent] { if let event { event_free(event) } }
        readEvent = nil
        writeEvent = nil
        readArmed = false
        writeArmed = false
        pipe = nil
        inPipe = 0
        pipeFull = false
        target.splicedBytesWaiting = 0
        copyDrained()
    }

    /// Reads the source while the target's output is below the high-water mark, and passes the end
    /// on once everything before it has been written.
    private func copyDrained() {
        guard !stopped, !finished else { return }
        if sourceDone {
            if target.pendingOutputBytes == 0 { return passEndOn() }
            return target.setDrainedMark(0)
        }
        source.setReading(true)
        if target.pendingOutputBytes > SpliceFlow.copyLowWater { copyBackpressure() }
    }

    /// Bytes arrived on the source (the copy path).
    func readable() {
        guard !stopped, pipe == nil else { return }
        moved += source.availableBytes
        source.moveInput(to: target)
        if target.pendingOutputBytes > SpliceFlow.copyHighWater { copyBackpressure() }
    }

    private func copyBackpressure() {
        source.setReading(false)
        target.setDrainedMark(SpliceFlow.copyLowWater)
    }

    // MARK: - The relay's events

    fileprivate func readReady() { pump() }

    fileprivate func writeReady() { pump() }
}

// Each holds the relay for the whole call: a callback may end it, which drops its own retain.

private func flowReadCallback(_ descriptor: Int32, _ what: Int16, _ context: UnsafeMutableRawPointer?) {
    guard let context else { return }
    let flow = Unmanaged<SpliceFlow>.fromOpaque(context).takeUnretainedValue()
    withExtendedLifetime(flow.relay) { flow.readReady() }
}

private func flowWriteCallback(_ descriptor: Int32, _ what: Int16, _ context: UnsafeMutableRawPointer?) {
    guard let context else { return }
    let flow = Unmanaged<SpliceFlow>.fromOpaque(context).takeUnretainedValue()
    withExtendedLifetime(flow.relay) { flow.writeReady() }
}
