internal import CLibevent
import Glibc

/// What happened to a connection besides data arriving.
public enum ConnectionEvent: Sendable, Equatable, CustomStringConvertible {
    /// An outgoing connect completed.
    case connected
    /// The peer closed its side.
    case endOfStream
    /// A socket error, with errno.
    case error(Int32)
    /// A read or write time limit passed.
    case timeout

    public var description: String {
        switch self {
        case .connected: "connected"
        case .endOfStream: "the peer closed the connection"
        case .error(let code): code == 0 ? "a socket error" : String(cString: strerror(code))
        case .timeout: "timed out"
        }
    }
}

/// A socket with libevent's buffers on an event base: the single owner of its `bufferevent` (which
/// closes the socket), freed in ``close()`` and only there.
///
/// The C callbacks' context is this object, retained from creation until ``close()``, so a callback
/// can never see a freed connection; `DEFER_CALLBACKS` keeps a callback that closes the connection
/// from re-entering libevent.
public final class Connection {
    private var raw: OpaquePointer?
    private var retainedForCallbacks: Unmanaged<Connection>?

    public var onReadable: ((Connection) -> Void)?
    public var onDrained: ((Connection) -> Void)?
    public var onEvent: ((Connection, ConnectionEvent) -> Void)?

    /// Wraps an accepted (or otherwise connected) socket; the connection owns it from here on.
    public init(base: EventBase, descriptor: Int32) throws(EventError) {
        evutil_make_socket_nonblocking(descriptor)
        let options = Int32(BEV_OPT_CLOSE_ON_FREE.rawValue | BEV_OPT_DEFER_CALLBACKS.rawValue)
        guard let bufferevent = bufferevent_socket_new(base.raw, descriptor, options) else {
            Glibc.close(descriptor)
            throw EventError("bufferevent_socket_new")
        }
        attach(bufferevent)
    }

    /// Takes ownership of a new bufferevent: the callbacks' context is this object, retained until
    /// ``close()``. Writes go up to 256 KiB per wake-up (libevent's default is 16 KiB), matching the reads.
    private func attach(_ bufferevent: OpaquePointer) {
        raw = bufferevent
        let context = Unmanaged.passRetained(self)
        retainedForCallbacks = context
        bufferevent_setcb(bufferevent, readCallback, writeCallback, eventCallback, context.toOpaque())
        _ = bufferevent_set_max_single_write(bufferevent, Connection.maximumReadPerCallback)
        bufferevent_enable(bufferevent, Int16(EV_READ | EV_WRITE))
    }

    /// Starts connecting to `host:port`, resolving the name asynchronously (nothing blocks the loop).
    /// ``onEvent`` reports `.connected` or the failure.
    public init(base: EventBase, connectingTo host: String, port: UInt16, resolver: DNSResolver) throws(EventError) {
        let options = Int32(BEV_OPT_CLOSE_ON_FREE.rawValue | BEV_OPT_DEFER_CALLBACKS.rawValue)
        guard let bufferevent = bufferevent_socket_new(base.raw, -1, options) else {
            throw EventError("bufferevent_socket_new")
        }
        attach(bufferevent)
        guard bufferevent_socket_connect_hostname(bufferevent, resolver.raw, AF_UNSPEC, host, Int32(port)) == 0 else {
            let error = EventError("connecting to \(host) port \(port)")
            close()
            throw error
        }
    }

    /// The resolver's error after a failed connect by name, in words (nil when it was not DNS).
    public var dnsError: String? {
        guard let raw else { return nil }
        let code = bufferevent_socket_get_dns_error(raw)
        return code == 0 ? nil : String(cString: evutil_gai_strerror(code))
    }

    deinit {
        // Unreachable while open: the callbacks' retain keeps the object alive until close().
        precondition(raw == nil, "a Connection must be closed before it is released")
    }

    public var isOpen: Bool { raw != nil }

    /// Bytes waiting in the input buffer.
    public var availableBytes: Int { raw.map { evbuffer_get_length(bufferevent_get_input($0)) } ?? 0 }

    /// Bytes not yet handed to the kernel.
    public var pendingOutputBytes: Int { raw.map { evbuffer_get_length(bufferevent_get_output($0)) } ?? 0 }

    /// Takes up to `maximum` bytes from the input buffer.
    public func read(maximum: Int = .max) -> [UInt8] { copyInput(maximum: maximum, removing: true) }

    /// Looks at the input without taking it.
    public func peek(maximum: Int = .max) -> [UInt8] { copyInput(maximum: maximum, removing: false) }

    private func copyInput(maximum: Int, removing: Bool) -> [UInt8] {
        guard let raw else { return [] }
        let input = bufferevent_get_input(raw)
        let count = min(maximum, evbuffer_get_length(input))
        guard count > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: count)
        let copied = bytes.withUnsafeMutableBytes { buffer in
            removing ? Int(evbuffer_remove(input, buffer.baseAddress, count)) : evbuffer_copyout(input, buffer.baseAddress, count)
        }
        return Array(bytes.prefix(max(0, copied)))
    }

    public func write(_ bytes: [UInt8]) {
        guard let raw, !bytes.isEmpty else { return }
        _ = bytes.withUnsafeBytes { bufferevent_write(raw, $0.baseAddress, $0.count) }
    }

    /// Moves everything in this connection's input to `other`'s output without copying the bytes
    /// (evbuffer chains are handed over): the relay's hot path.
    public func moveInput(to other: Connection) {
        guard let raw, let target = other.raw else { return }
        evbuffer_add_buffer(bufferevent_get_output(target), bufferevent_get_input(raw))
    }

    /// Moves at most `maximum` bytes of this connection's input to `other`'s output, without copying
    /// where whole chains fit; returns how many moved. For bodies whose length the proxy tracks.
    @discardableResult
    public func moveInput(to other: Connection, maximum: Int) -> Int {
        guard let raw, let target = other.raw, maximum > 0 else { return 0 }
        return Int(evbuffer_remove_buffer(bufferevent_get_input(raw), bufferevent_get_output(target), maximum))
    }

    /// Discards the first `count` bytes of the input (after a ``peek(maximum:)`` has looked at them).
    public func discardInput(_ count: Int) {
        guard let raw, count > 0 else { return }
        evbuffer_drain(bufferevent_get_input(raw), count)
    }

    /// Whether reading is on (it is unless ``setReading(_:)`` turned it off).
    public var isReading: Bool {
        guard let raw else { return false }
        return Int32(bufferevent_get_enabled(raw)) & Int32(EV_READ) != 0
    }

    /// Stops or resumes reading: backpressure, so a slow reader never makes memory grow.
    public func setReading(_ enabled: Bool) {
        guard let raw else { return }
        if enabled { bufferevent_enable(raw, Int16(EV_READ)) } else { bufferevent_disable(raw, Int16(EV_READ)) }
    }

    /// Calls ``onDrained`` once the output falls to `low` bytes (0: fully written).
    public func setDrainedMark(_ low: Int) {
        guard let raw else { return }
        drainedMark = low
        bufferevent_setwatermark(raw, Int16(EV_WRITE), low, 0)
    }

    private var drainedMark = 0

    /// Read and write time limits; nil removes them.
    public func setTimeouts(read: Duration?, write: Duration?) {
        guard let raw else { return }
        var readValue = read.map(Glibc.timeval.init(duration:))
        var writeValue = write.map(Glibc.timeval.init(duration:))
        withOptionalPointer(&readValue) { readPointer in
            withOptionalPointer(&writeValue) { writePointer in _ = bufferevent_set_timeouts(raw, readPointer, writePointer) }
        }
    }

    /// Half-closes: no more writes from us once the output is flushed by the kernel.
    public func shutdownWrite() {
        guard let raw else { return }
        shutdown(bufferevent_getfd(raw), Int32(SHUT_WR))
    }

    /// Frees the bufferevent (closing the socket) and drops the callbacks' retain. Idempotent.
    public func close() {
        guard let raw else { return }
        bufferevent_setcb(raw, nil, nil, nil, nil)
        bufferevent_free(raw)
        self.raw = nil
        onReadable = nil
        onDrained = nil
        onEvent = nil
        let retained = retainedForCallbacks
        retainedForCallbacks = nil
        retained?.release()
    }

    fileprivate func readable() {
        topUpInput()
        onReadable?(self)
    }

    /// The most one read callback takes from the socket.
    static let maximumReadPerCallback = 256 * 1024
    /// libevent 2.1's evbuffer_read never takes more than this (EVBUFFER_MAX_READ) per wake-up.
    private static let libeventReadCap = 4096

    /// libevent 2.1 reads at most 4 KiB per wake-up, however much is waiting: a bulk transfer then
    /// costs an epoll round, an ioctl and a readv per 4 KiB. When libevent's read filled that cap,
    /// more is probably waiting, so this reads the rest (up to ``maximumReadPerCallback``) straight
    /// into the input buffer, 64 KiB per readv, the way bufferevent_readcb does: with the buffer's
    /// end unfrozen for the read. End of stream and errors are left for libevent's next read,
    /// which sees them again.
    private func topUpInput() {
        guard let raw else { return }
        let input = bufferevent_get_input(raw)
        guard evbuffer_get_length(input) >= Connection.libeventReadCap else { return }
        let descriptor = bufferevent_getfd(raw)
        evbuffer_unfreeze(input, 0)
        defer { evbuffer_freeze(input, 0) }
        var total = 0
        withUnsafeTemporaryAllocation(of: iovec.self, capacity: 2) { vectors in
            while total < Connection.maximumReadPerCallback {
                let count = Int(evbuffer_reserve_space(input, 65_536, vectors.baseAddress, 2))
                guard count > 0 else { return }
                // On Linux <event2/buffer.h> defines evbuffer_iovec as struct iovec: readv takes them as they are.
                let received = readv(descriptor, vectors.baseAddress, Int32(count))
                guard received > 0 else {
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
            }
        }
    }
    /// libevent also runs the write callback when a socket it did not connect itself first becomes
    /// writable, with nothing written; with deferred callbacks that call can land after a handler was
    /// installed for a real drain. Only a buffer at or below the mark counts as drained.
    fileprivate func drained() {
        guard pendingOutputBytes <= drainedMark else { return }
        onDrained?(self)
    }

    fileprivate func event(_ what: Int16) {
        let flags = Int32(what)
        let event: ConnectionEvent
        if flags & Int32(BEV_EVENT_CONNECTED) != 0 {
            event = .connected
        } else if flags & Int32(BEV_EVENT_TIMEOUT) != 0 {
            event = .timeout
        } else if flags & Int32(BEV_EVENT_EOF) != 0 {
            event = .endOfStream
        } else {
            event = .error(errno)
        }
        onEvent?(self, event)
    }

}

private func withOptionalPointer<T, R>(_ value: inout T?, _ body: (UnsafePointer<T>?) -> R) -> R {
    guard var unwrapped = value else { return body(nil) }
    defer { value = unwrapped }
    return withUnsafePointer(to: &unwrapped) { body($0) }
}

private func connection(_ context: UnsafeMutableRawPointer?) -> Connection? {
    context.map { Unmanaged<Connection>.fromOpaque($0).takeUnretainedValue() }
}

private func readCallback(_ bufferevent: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    connection(context)?.readable()
}

private func writeCallback(_ bufferevent: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    connection(context)?.drained()
}

private func eventCallback(_ bufferevent: OpaquePointer?, _ what: Int16, _ context: UnsafeMutableRawPointer?) {
    connection(context)?.event(what)
}
