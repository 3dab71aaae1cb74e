internal import CLibevent
import Glibc
import POSIX

/// What happened to a byte stream (a ``SocketStream``, or a TLS session over one) besides data arriving.
package enum StreamEvent: Sendable, Equatable, CustomStringConvertible {
    /// An outgoing connect completed.
    case connected
    /// The peer closed its side.
    case endOfStream
    /// A socket error, with errno.
    case error(Int32)
    /// A read or write time limit passed.
    case timeout

    package var description: String {
        switch self {
        case .connected: "connected"
        case .endOfStream: "the peer closed the connection"
        case .error(let code): code == 0 ? "a socket error" : String(cString: strerror(code))
        case .timeout: "timed out"
        }
    }
}

/// A non-blocking socket with an input and an output buffer on an event base: the single owner of
/// the socket, its two `evbuffer`s and its three `event`s, all freed (and the socket closed) in
/// ``close()`` and only there.
///
/// Built on plain events rather than a `bufferevent`, for the syscalls a bufferevent spends:
/// - reads take what the socket holds without asking first (`evbuffer_read` does an
///   `ioctl(FIONREAD)` before every read, and never reads more than 4 KiB);
/// - writes go to the socket at once, and the write event is armed only when the socket would
///   block (a bufferevent arms it for every write, and disarms it once written: two `epoll_ctl`
///   and a trip through the loop per write);
/// - the read event is armed only while reading is on, so turning reading off and on again in one
///   loop turn costs nothing (libevent's changelist folds it).
///
/// Callbacks (``onReadable``, ``onDrained``, ``onEvent``) only ever run from the event loop, never
/// from inside a method of this class: what a method finds (a write error, an end of stream, a
/// buffer drained at once) is reported through the notice event, later in the same loop turn.
/// That is what `BEV_OPT_DEFER_CALLBACKS` gave: a callback may close the connection, or write to
/// another, without re-entering the one that called it.
///
/// The C callbacks' context is this object, retained from creation until ``close()``, so a callback
/// can never see a freed connection.
package final class SocketStream: ByteStream {
    private enum Phase {
        /// An outgoing connection with no socket yet (its socket could not be made; the failure is
        /// being reported).
        case noSocket
        /// connect() is in progress.
        case connecting
        /// Connected (accepted, or an outgoing connect completed).
        case open
        /// ``close()`` ran.
        case closed
    }

    let base: EventBase
    private var phase: Phase
    private var descriptor: Int32 = -1
    private var input: OpaquePointer?
    private var output: OpaquePointer?
    /// Readability, with the read time limit; pending exactly while ``readArmed``.
    private var readEvent: OpaquePointer?
    /// Writability (or a connect's completion), with the write time limit; pending exactly while
    /// ``writeArmed``. Before a socket exists it is a plain timer for the write limit.
    private var writeEvent: OpaquePointer?
    /// Made active by hand to report what a method found, from the loop.
    private var noticeEvent: OpaquePointer?
    /// ``noteReadable()`` asked for an ``onReadable`` call from the notice event.
    private var readableNoticeDue = false
    private var retainedForCallbacks: Unmanaged<SocketStream>?

    private var reading = true
    private var readArmed = false
    private var writeArmed = false
    /// A write failed: nothing more is written (the error has been or will be reported).
    private var writeFailed = false
    private var readLimit: timeval?
    private var writeLimit: timeval?
    private var drainedMark = 0
    /// When a byte last moved through the socket, either way (``MonotonicClock``); a
    /// ``SpliceRelay`` moving this socket's bytes keeps it up to date too.
    package internal(set) var lastActivity = MonotonicClock.nowMilliseconds()
    /// Bytes a ``SpliceRelay`` holds in its pipe for this socket: waiting, as the output's are.
    var splicedBytesWaiting = 0
    /// The relay moving this socket's bytes, told when the connection closes under it.
    weak var relay: SpliceRelay?

    // What the notice event reports, in this order.
    private var connectedNoticeDue = false
    private var failureNotice: StreamEvent?
    private var drainedNoticeDue = false

    package var onReadable: ((any ByteStream) -> Void)?
    package var onDrained: ((any ByteStream) -> Void)?
    package var onEvent: ((any ByteStream, StreamEvent) -> Void)?

    /// Wraps an accepted (or otherwise connected) socket; the connection owns it from here on.
    /// Reading is on.
    /// The local address of the socket: the proxy's own address as the peer reached it.
    package var localAddress: SocketAddress? { descriptor >= 0 ? SocketAddress.local(of: descriptor) : nil }

    package init(base: EventBase, descriptor: Int32) throws(EventError) {
        self.base = base
        phase = .open
        guard evutil_make_socket_nonblocking(descriptor) == 0 else {
            let error = EventError("making the socket non-blocking")
            Glibc.close(descriptor)
            throw error
        }
        Self.sendSmallWritesAtOnce(descriptor)
        do {
            try setUp(descriptor: descriptor)
        } catch {
            Glibc.close(descriptor)
            throw error
        }
        armRead()
    }

    /// Turns Nagle's algorithm off (`TCP_NODELAY`): a relay writes what it has read as it reads it,
    /// and each write must leave at once. With Nagle, a write after a small unacknowledged one
    /// waits for the peer's delayed ACK, about 40 ms on Linux: a server's response written after
    /// its session tickets reached the device that much late (make bench-latency; squid, nginx and
    /// haproxy set it too). Not a TCP socket (a Unix one): the call fails, harmlessly.
    /// Whether the socket sends each write at once (`TCP_NODELAY`); false without a TCP socket.
    package var sendsSmallWritesAtOnce: Bool {
        var value: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &value, &size) == 0 && value != 0
    }

    private static func sendSmallWritesAtOnce(_ descriptor: Int32) {
        var on: Int32 = 1
        _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Starts connecting to `address` (already resolved: ``DNSResolver/lookUp(_:port:completion:)``).
    /// ``onEvent`` reports `.connected` or the failure; the write time limit bounds the connect.
    /// - Parameter mark: the firewall mark the socket's packets carry (`SO_MARK`, set before the
    ///   SYN goes), so that rules redirecting devices' traffic to the proxy can exempt its own
    ///   connections; nil for none. A mark the kernel refuses fails the connect.
    package init(base: EventBase, connectingTo address: SocketAddress, mark: UInt32? = nil) throws(EventError) {
        self.base = base
        phase = .noSocket
        try setUp(descriptor: -1)
        var storage = address.storage
        withUnsafePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(to: $0, length: socklen_t(address.length), mark: mark)
            }
        }
    }

    /// The buffers and events; the descriptor may be -1 (bound later by ``bind(descriptor:)``).
    private func setUp(descriptor: Int32) throws(EventError) {
        let context = Unmanaged.passRetained(self)
        retainedForCallbacks = context
        input = evbuffer_new()
        output = evbuffer_new()
        guard input != nil, output != nil, let read = event_new(base.raw, -1, 0, readCallback, context.toOpaque()),
            let write = event_new(base.raw, -1, 0, writeCallback, context.toOpaque()),
            let notice = event_new(base.raw, -1, 0, noticeCallback, context.toOpaque())
        else {
            let error = EventError("setting up a connection")
            close()
            throw error
        }
        readEvent = read
        writeEvent = write
        noticeEvent = notice
        if descriptor >= 0 { bind(descriptor: descriptor) }
    }

    /// Points the read and write events at the socket (they must not be pending).
    private func bind(descriptor: Int32) {
        guard let readEvent, let writeEvent, let context = retainedForCallbacks?.toOpaque() else { return }
        self.descriptor = descriptor
        event_assign(readEvent, base.raw, descriptor, Int16(EV_READ | EV_PERSIST), readCallback, context)
        event_assign(writeEvent, base.raw, descriptor, Int16(EV_WRITE | EV_PERSIST), writeCallback, context)
    }

    deinit {
        // Unreachable while open: the callbacks' retain keeps the object alive until close().
        precondition(retainedForCallbacks == nil, "a SocketStream must be closed before it is released")
    }

    package var isOpen: Bool { phase != .closed }

    /// The socket (-1 before a connect by name has one, and once closed), for a ``SpliceRelay``.
    var socket: Int32 { descriptor }

    /// Bytes waiting in the input buffer.
    package var availableBytes: Int { input.map { evbuffer_get_length($0) } ?? 0 }

    /// Bytes not yet handed to the kernel.
    package var pendingOutputBytes: Int { output.map { evbuffer_get_length($0) } ?? 0 }

    /// Whether bytes wait for the peer to take them: in the output buffer, or handed to the kernel
    /// and not yet acknowledged (`TIOCOUTQ`, one system call). A reader that pauses holds bytes like
    /// this; a connection where nothing is sent holds none.
    package var hasBytesWaiting: Bool {
        if pendingOutputBytes > 0 || splicedBytesWaiting > 0 { return true }
        guard descriptor >= 0 else { return false }
        var queued: Int32 = 0
        return ioctl(descriptor, UInt(TIOCOUTQ), &queued) == 0 && queued > 0
    }

    /// Takes up to `maximum` bytes from the input buffer.
    package func read(maximum: Int) -> [UInt8] { copyInput(maximum: maximum, removing: true) }

    /// Looks at the input without taking it.
    package func peek(maximum: Int) -> [UInt8] { copyInput(maximum: maximum, removing: false) }

    private func copyInput(maximum: Int, removing: Bool) -> [UInt8] {
        guard let input else { return [] }
        let count = min(maximum, evbuffer_get_length(input))
        guard count > 0 else { return [] }
        // Uninitialized storage filled by libevent: no zeroing first, no second copy to trim.
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            let copied =
                removing
                ? Int(evbuffer_remove(input, buffer.baseAddress, count))
                : evbuffer_copyout(input, buffer.baseAddress, count)
            initialized = max(0, copied)
        }
    }

    /// Queues `bytes` and writes what the socket takes at once.
    package func write(_ bytes: [UInt8]) {
        guard let output, !bytes.isEmpty else { return }
        _ = bytes.withUnsafeBytes { evbuffer_add(output, $0.baseAddress, $0.count) }
        flushNow()
    }

    /// Queues a reference to `shared` (no copy: the output buffer holds it until the socket has
    /// taken its bytes, then lets it go) and writes what the socket takes at once.
    package func write(_ shared: SharedBytes) {
        guard let output, shared.count > 0 else { return }
        let context = Unmanaged.passRetained(shared).toOpaque()
        guard evbuffer_add_reference(output, shared.base, shared.count, releaseSharedBytes, context) == 0 else {
            Unmanaged<SharedBytes>.fromOpaque(context).release()
            return write(shared.bytes)
        }
        flushNow()
    }

    /// Moves everything in this connection's input to `other`'s output without copying the bytes
    /// (evbuffer chains are handed over), and writes what `other`'s socket takes at once: the
    /// relay's hot path.
    package func moveInput(to other: any ByteStream) {
        guard let other = other as? SocketStream else { return other.write(read()) }
        guard let input, let target = other.output else { return }
        evbuffer_add_buffer(target, input)
        other.flushNow()
    }

    /// Moves at most `maximum` bytes of this connection's input to `other`'s output, without copying
    /// where whole chains fit; returns how many moved. For bodies whose length the proxy tracks.
    @discardableResult
    package func moveInput(to other: any ByteStream, maximum: Int) -> Int {
        guard let other = other as? SocketStream else {
            let bytes = read(maximum: maximum)
            other.write(bytes)
            return bytes.count
        }
        guard let input, let target = other.output, maximum > 0 else { return 0 }
        let moved = Int(evbuffer_remove_buffer(input, target, maximum))
        other.flushNow()
        return moved
    }

    /// Moves up to `buffer.count` bytes of the input into `buffer`; returns how many.
    package func takeInput(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard let input, let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        return max(0, Int(evbuffer_remove(input, base, buffer.count)))
    }

    /// Queues `bytes` without writing them yet: a producer that writes in pieces (TLS records)
    /// calls ``flush()`` once it is done, for one system call instead of one per piece.
    package func queue(_ bytes: UnsafeRawBufferPointer) {
        guard let output, let base = bytes.baseAddress, !bytes.isEmpty else { return }
        evbuffer_add(output, base, bytes.count)
    }

    /// Writes what the socket takes of the queued output now (the rest when it can).
    package func flush() { flushNow() }

    /// Whether the peer ended its side: reading stopped at its end of stream (reported through
    /// ``onEvent`` from the loop), and nothing more will arrive.
    package private(set) var inputEnded = false

    /// A socket's end is its FIN, which is the peer's own: clean whenever it came (a reset is an
    /// error, never an end).
    package var inputEndedCleanly: Bool { inputEnded }

    /// Discards the first `count` bytes of the input (after a ``peek(maximum:)`` has looked at them).
    package func discardInput(_ count: Int) {
        guard let input, count > 0 else { return }
        evbuffer_drain(input, count)
    }

    /// Whether reading is on: it is from creation until ``setReading(_:)`` turns it off, or an end
    /// of stream, an error or a read timeout does.
    package var isReading: Bool { phase != .closed && reading }

    /// Stops or resumes reading: backpressure, so a slow reader never makes memory grow.
    package func setReading(_ enabled: Bool) {
        guard phase != .closed, enabled != reading else { return }
        reading = enabled
        if enabled { armRead() } else { disarmRead() }
    }

    /// Reads what the socket holds right now into the input buffer, without waiting and without
    /// calling ``onReadable``: for a peer that has usually spoken already (a client sends its request
    /// with its connection), this saves a trip through the loop. An end of stream or an error found
    /// is reported through ``onEvent`` from the loop, as if the loop had found it.
    package func readImmediately() {
        guard phase == .open, reading else { return }
        if let end = receive().end { stopReading(reporting: end) }
    }

    /// Calls ``onDrained`` once the output falls to `low` bytes (0: fully written); when it already
    /// is at or below, soon after this call (from the loop).
    package func setDrainedMark(_ low: Int) {
        guard phase != .closed else { return }
        drainedMark = low
        if pendingOutputBytes <= low { noteDrained() }
    }

    /// Read and write time limits; nil removes them. The read limit runs while reading is on, the
    /// write limit while a connect is in progress or written bytes wait for the socket.
    package func setTimeouts(read: Duration?, write: Duration?) {
        guard phase != .closed else { return }
        readLimit = read.map(timeval.init(duration:))
        writeLimit = write.map(timeval.init(duration:))
        if readArmed { rearm(readEvent, limit: readLimit) }
        if writeArmed {
            rearm(writeEvent, limit: writeLimit)
        } else if phase == .noSocket, writeLimit != nil {
            armWrite()  // A plain timer while there is no socket.
        }
    }

    /// Half-closes: no more writes from us once the output is flushed by the kernel.
    package func shutdownWrite() {
        guard descriptor >= 0, phase != .closed else { return }
        shutdown(descriptor, Int32(SHUT_WR))
    }

    /// Sets `SO_LINGER` to on with no time (tcp(7): close() then drops the send queue and sends a
    /// RST, not a FIN), then closes as ``close()`` does.
    package func reset() {
        guard phase != .closed else { return }
        if descriptor >= 0 {
            var abortive = linger(l_onoff: 1, l_linger: 0)
            _ = setsockopt(descriptor, SOL_SOCKET, SO_LINGER, &abortive, socklen_t(MemoryLayout<linger>.size))
        }
        close()
    }

    /// Frees the events and buffers, closes the socket and drops the callbacks' retain. Idempotent.
    /// A ``SpliceRelay`` on the socket stops first (its events leave the socket before it closes).
    /// Runs once when the stream closes, whoever closes it: bookkeeping of the one who opened it
    /// (``UpstreamDialer`` lists the proxy's own connections while they are open).
    package var onClosed: (() -> Void)?

    package func close() {
        guard phase != .closed else { return }
        let closed = onClosed
        onClosed = nil
        closed?()
        if let relay {
            self.relay = nil
            relay.connectionClosing()
        }
        phase = .closed
        onReadable = nil
        onDrained = nil
        onEvent = nil
        for event in [readEvent, writeEvent, noticeEvent] { if let event { event_free(event) } }
        readEvent = nil
        writeEvent = nil
        noticeEvent = nil
        readArmed = false
        writeArmed = false
        if let input { evbuffer_free(input) }
        if let output { evbuffer_free(output) }
        input = nil
        output = nil
        if descriptor >= 0 { Glibc.close(descriptor) }
        descriptor = -1
        let retained = retainedForCallbacks
        retainedForCallbacks = nil
        retained?.release()
    }

    // MARK: - Events

    private func armRead() {
        guard !readArmed, reading, phase == .open || phase == .connecting, let readEvent else { return }
        readArmed = true
        add(readEvent, limit: readLimit)
    }

    private func disarmRead() {
        guard readArmed, let readEvent else { return }
        readArmed = false
        event_del(readEvent)
    }

    private func armWrite() {
        guard !writeArmed, let writeEvent else { return }
        writeArmed = true
        add(writeEvent, limit: writeLimit)
    }

    private func disarmWrite() {
        guard writeArmed, let writeEvent else { return }
        writeArmed = false
        event_del(writeEvent)
    }

    private func add(_ event: OpaquePointer, limit: timeval?) {
        if var limit {
            event_add(event, &limit)
            return
        }
        // No limit. event_add(ev, NULL) is not enough for a persistent event: libevent keeps the
        // last timeout it was given (ev_io_timeout) and arms it again after the next activation, so
        // a limit set once (a ClientHello's deadline) would come back after the first read.
        // event_remove_timer clears it, but only from an event pending with a timeout: give it one.
        var placeholder = timeval(tv_sec: 3600, tv_usec: 0)
        event_add(event, &placeholder)
        event_remove_timer(event)
    }

    /// A pending event takes a new limit by being added again; only removing the limit needs a
    /// delete first (in the same loop turn, which the changelist folds into no epoll_ctl).
    private func rearm(_ event: OpaquePointer?, limit: timeval?) {
        guard let event else { return }
        if limit == nil { event_del(event) }
        add(event, limit: limit)
    }

    private func noteDrained() {
        drainedNoticeDue = true
        notify()
    }

    private func notify() {
        if let noticeEvent { event_active(noticeEvent, Int32(EV_TIMEOUT), 0) }
    }

    // MARK: - Reading

    /// The most one read callback takes from the socket.
    static let maximumReadPerCallback = 256 * 1024
    /// The most one write takes from the output.
    static let maximumWritePerCall = 256 * 1024

    /// Reads until the socket has no more, or ``maximumReadPerCallback`` is in. The first read goes
    /// to the loop's scratch buffer and is copied into the input: the input's chains then hold what
    /// arrived and no more, so many small reads queued for a slow reader do not take a large chain
    /// each. When that read fills the scratch buffer, a bulk transfer is under way and the rest is
    /// read straight into the input's own space (64 KiB chains, filled), without the copy.
    private func receive() -> (count: Int, end: StreamEvent?) {
        guard let input, descriptor >= 0 else { return (0, nil) }
        let scratch = base.readScratch
        let first = recv(descriptor, scratch.baseAddress, scratch.count, 0)
        guard first > 0 else { return (0, Self.ending(first)) }
        lastActivity = MonotonicClock.nowMilliseconds()
        evbuffer_add(input, scratch.baseAddress, first)
        guard first == scratch.count else { return (first, nil) }
        var total = first
        var end: StreamEvent?
        withUnsafeTemporaryAllocation(of: iovec.self, capacity: 2) { vectors in
            while total < SocketStream.maximumReadPerCallback {
                let count = Int(evbuffer_reserve_space(input, 65_536, vectors.baseAddress, 2))
                guard count > 0 else { return }
                // On Linux <event2/buffer.h> defines evbuffer_iovec as struct iovec: readv takes them as they are.
                let received = readv(descriptor, vectors.baseAddress, Int32(count))
                guard received > 0 else {
                    end = Self.ending(received)
                    evbuffer_commit_space(input, vectors.baseAddress, 0)
                    return
                }
                var left = received
                for index in 0..<count {
                    let taken = min(left, vectors[index].iov_len)
                    vectors[index].iov_len = taken
                    left -= taken
                }
                evbuffer_commit_space(input, vectors.baseAddress, Int32(count))
                total += received
                if received < 65_536 { return }
            }
        }
        return (total, end)
    }

    /// What a read that returned `result` (0 or -1) means: nil when there is just nothing more yet.
    private static func ending(_ result: Int) -> StreamEvent? {
        if result == 0 { return .endOfStream }
        let code = errno
        return Errno.isTransient(code) ? nil : .error(code)
    }

    /// An end of stream or a read error stops reading (as a bufferevent does), and is reported.
    private func stopReading(reporting end: StreamEvent) {
        reading = false
        if end == .endOfStream { inputEnded = true }
        disarmRead()
        if failureNotice == nil { failureNotice = end }
        notify()
    }

    fileprivate func readReady(_ what: Int16) {
        guard phase != .closed else { return }
        if Int32(what) & Int32(EV_TIMEOUT) != 0 {
            reading = false
            disarmRead()
            onEvent?(self, .timeout)
            return
        }
        let (count, end) = receive()
        if count > 0 { onReadable?(self) }
        guard let end, phase != .closed else { return }
        reading = false
        if end == .endOfStream { inputEnded = true }
        disarmRead()
        onEvent?(self, end)
    }

    // MARK: - Writing

    /// Writes what the output holds now, unless a connect is in progress or the socket is known to
    /// be full (the write event then writes when it can); arms the write event when the socket does
    /// not take everything.
    private func flushNow() {
        guard phase == .open, !writeArmed, !writeFailed, pendingOutputBytes > 0 else { return }
        switch writeOutput() {
        case .wrote:
            if pendingOutputBytes > 0 {
                armWrite()
            } else if onDrained != nil, pendingOutputBytes <= drainedMark {
                noteDrained()
            }
        case .wouldBlock:
            armWrite()
        case .failed(let code):
            writeFailed = true
            if failureNotice == nil { failureNotice = .error(code) }
            notify()
        }
    }

    private enum WriteResult {
        case wrote, wouldBlock
        case failed(Int32)
    }

    /// One sendmsg of up to ``maximumWritePerCall`` bytes from the output's chains (MSG_NOSIGNAL: a
    /// peer that reset the connection is an error to report, not a SIGPIPE).
    private func writeOutput() -> WriteResult {
        guard let output else { return .wouldBlock }
        let maximumVectors = 64
        let sent: Int = withUnsafeTemporaryAllocation(of: iovec.self, capacity: maximumVectors) { vectors in
            let filled = Int(
                evbuffer_peek(output, SocketStream.maximumWritePerCall, nil, vectors.baseAddress, Int32(maximumVectors))
            )
            let count = min(filled, maximumVectors)
            // The last extent may run past the limit; it is cut to it.
            var left = SocketStream.maximumWritePerCall
            for index in 0..<count {
                vectors[index].iov_len = min(vectors[index].iov_len, left)
                left -= vectors[index].iov_len
            }
            var message = msghdr()
            message.msg_iov = vectors.baseAddress
            message.msg_iovlen = count
            return sendmsg(descriptor, &message, Int32(MSG_NOSIGNAL))
        }
        if sent > 0 {
            evbuffer_drain(output, sent)
            lastActivity = MonotonicClock.nowMilliseconds()
            return .wrote
        }
        let code = errno
        return sent < 0 && !Errno.isTransient(code) ? .failed(code) : .wouldBlock
    }

    fileprivate func writeReady(_ what: Int16) {
        guard phase != .closed else { return }
        if Int32(what) & Int32(EV_TIMEOUT) != 0 {
            disarmWrite()
            onEvent?(self, .timeout)
            return
        }
        if phase == .connecting { return connectFinished() }
        guard !writeFailed, pendingOutputBytes > 0 else { return disarmWrite() }
        switch writeOutput() {
        case .wrote:
            if pendingOutputBytes == 0 { disarmWrite() }
            drained()
        case .wouldBlock:
            return
        case .failed(let code):
            writeFailed = true
            disarmWrite()
            onEvent?(self, .error(code))
        }
    }

    /// Only a buffer at or below the mark counts as drained.
    private func drained() {
        guard phase != .closed, pendingOutputBytes <= drainedMark else { return }
        onDrained?(self)
    }

    // MARK: - Connecting

    /// Opens the socket and starts the connect; the outcome is reported from the loop.
    private func connect(to socketAddress: UnsafePointer<sockaddr>, length: socklen_t, mark: UInt32?) {
        let socketType =
            Int32(Glibc.SOCK_STREAM.rawValue) | Int32(Glibc.SOCK_NONBLOCK.rawValue) | Int32(Glibc.SOCK_CLOEXEC.rawValue)
        let descriptor = Glibc.socket(Int32(socketAddress.pointee.sa_family), socketType, Int32(IPPROTO_TCP))
        guard descriptor >= 0 else { return failConnect(errno) }
        if let mark {
            do {
                try SocketAddress.setMark(mark, on: descriptor)
            } catch {
                Glibc.close(descriptor)
                return failConnect(error.errno)
            }
        }
        Self.sendSmallWritesAtOnce(descriptor)
        // The write event was a plain timer for the limit so far; it watches the socket from here
        // (with the limit starting again, as a bufferevent's does when its connect starts).
        disarmWrite()
        bind(descriptor: descriptor)
        var code: Int32 = 0
        if Glibc.connect(descriptor, socketAddress, length) != 0 {
            code = errno
            // A server on this machine has usually completed the handshake by the time connect()
            // returns EINPROGRESS: asking again (0 once established, EALREADY while not) saves
            // waiting a loop turn for the socket to become writable. Elsewhere it costs one call.
            if code == EINPROGRESS { code = Glibc.connect(descriptor, socketAddress, length) == 0 ? 0 : errno }
        }
        switch code {
        case 0:
            phase = .open
            armRead()
            connectedNoticeDue = true
            flushNow()
            notify()
        case EINPROGRESS, EALREADY, EINTR:
            phase = .connecting
            armWrite()
            armRead()
        default:
            failConnect(code)
        }
    }

    private func failConnect(_ code: Int32) {
        disarmWrite()
        if failureNotice == nil { failureNotice = .error(code) }
        notify()
    }

    private func connectFinished() {
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &code, &length) != 0 { code = errno }
        if code == EINPROGRESS || code == EALREADY || code == EINTR { return }
        disarmWrite()
        guard code == 0 else {
            onEvent?(self, .error(code))
            return
        }
        phase = .open
        flushNow()
        onEvent?(self, .connected)
    }

    fileprivate func deliverNotices() {
        if connectedNoticeDue {
            connectedNoticeDue = false
            onEvent?(self, .connected)
        }
        if let failure = failureNotice, phase != .closed {
            failureNotice = nil
            onEvent?(self, failure)
        }
        if drainedNoticeDue, phase != .closed {
            drainedNoticeDue = false
            drained()
        }
        if readableNoticeDue, phase != .closed {
            readableNoticeDue = false
            onReadable?(self)
        }
    }

    /// Calls ``onReadable`` soon, from the loop, whatever the input holds: for a reader layered on
    /// the connection (a TLS session) that stopped taking bytes it already has, and must be told to
    /// take them again when no new byte will come to say so.
    package func noteReadable() {
        guard phase != .closed else { return }
        readableNoticeDue = true
        notify()
    }
}

private func connection(_ context: UnsafeMutableRawPointer?) -> SocketStream? {
    context.map { Unmanaged<SocketStream>.fromOpaque($0).takeUnretainedValue() }
}

// The callbacks hold the connection for the whole call: a callback that closes it drops the retain
// it was created with, and the object must outlive the method that is still running.

private func readCallback(_ descriptor: Int32, _ what: Int16, _ context: UnsafeMutableRawPointer?) {
    guard let connection = connection(context) else { return }
    withExtendedLifetime(connection) { connection.readReady(what) }
}

private func writeCallback(_ descriptor: Int32, _ what: Int16, _ context: UnsafeMutableRawPointer?) {
    guard let connection = connection(context) else { return }
    withExtendedLifetime(connection) { connection.writeReady(what) }
}

private func noticeCallback(_ descriptor: Int32, _ what: Int16, _ context: UnsafeMutableRawPointer?) {
    guard let connection = connection(context) else { return }
    withExtendedLifetime(connection) { connection.deliverNotices() }
}

/// libevent's cleanup for a ``SharedBytes`` reference in an output buffer: the chain holding it was
/// drained or freed, so the buffer's retain (taken in ``SocketStream/write(_:)-shared``) ends.
private func releaseSharedBytes(_: UnsafeRawPointer?, _: Int, _ context: UnsafeMutableRawPointer?) {
    guard let context else { return }
    Unmanaged<SharedBytes>.fromOpaque(context).release()
}
