internal import CLibevent
import Glibc

/// A listening socket on an event base: the single owner of its `evconnlistener` (which closes the
/// socket), freed in `deinit`. Each accepted connection is handed to `onAccept` on the loop's thread.
package final class Listener {
    private var raw: OpaquePointer?
    private let onAccept: (Int32, SocketAddress) -> Void
    /// Re-enables accepting after a pause for lack of descriptors.
    private var resume: Timer?
    /// How long accepting pauses when the process is out of descriptors (EMFILE, ENFILE, ENOBUFS).
    package static let exhaustionPause: Duration = .milliseconds(200)
    /// How many pauses there have been, for status reports and tests.
    package private(set) var pauses = 0
    /// Told of each pause with the errno that caused it (the owner says so, once per burst).
    package var onPause: ((Int32) -> Void)?
    /// The errno of the last failed accept().
    package private(set) var lastAcceptError: Int32 = 0
    /// The address actually bound (with the port the kernel chose for port 0).
    package private(set) var address: SocketAddress

    /// The accept queue: libevent's default (-1) is 128, and a burst of clients beyond it (a
    /// phone's apps reconnecting at once, or 400 CONNECTs in the hostile bench) has its SYNs
    /// dropped and retried a second later. The kernel caps it at net.core.somaxconn.
    static let backlog: Int32 = 4096

    package init(base: EventBase, address: SocketAddress, onAccept: @escaping (Int32, SocketAddress) -> Void)
        throws(EventError)
    {
        self.onAccept = onAccept
        self.address = address
        var bind = address.storage
        let flags = UInt32(LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC)
        // The listener outlives none of its callbacks: deinit frees it first, so an unretained
        // reference is safe as the callback context.
        let context = Unmanaged.passUnretained(self).toOpaque()
        let listener = withUnsafePointer(to: &bind) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                evconnlistener_new_bind(base.raw, acceptCallback, context, flags, Listener.backlog, $0, address.length)
            }
        }
        guard let listener else { throw EventError("listening on \(address)") }
        try adopt(listener, base: base)
        if let bound = SocketAddress.local(of: evconnlistener_get_fd(listener)) { self.address = bound }
    }

    /// Listens on a socket already bound (a Unix-domain socket, say); the listener owns and closes it.
    package init(
        base: EventBase, boundDescriptor descriptor: Int32, onAccept: @escaping (Int32, SocketAddress) -> Void
    ) throws(EventError) {
        self.onAccept = onAccept
        address = SocketAddress.local(of: descriptor) ?? SocketAddress(storage: sockaddr_storage(), length: 0)
        let flags = UInt32(LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC)
        let context = Unmanaged.passUnretained(self).toOpaque()
        guard let listener = evconnlistener_new(base.raw, acceptCallback, context, flags, 64, descriptor) else {
            Glibc.close(descriptor)
            throw EventError("listening on \(address)")
        }
        try adopt(listener, base: base)
    }

    private func adopt(_ listener: OpaquePointer, base: EventBase) throws(EventError) {
        raw = listener
        resume = try Timer(base: base) { [unowned self] in
            if let raw { evconnlistener_enable(raw) }
        }
        evconnlistener_set_error_cb(listener, acceptErrorCallback)
    }

    deinit {
        if let raw { evconnlistener_free(raw) }
    }

    fileprivate func accept(_ descriptor: Int32, _ peer: SocketAddress) { onAccept(descriptor, peer) }

    /// accept() failed for a reason libevent does not retry by itself. Out of descriptors, the
    /// pending connection stays in the backlog and the socket stays readable, so retrying at once
    /// would spin: accepting pauses instead, and the clients wait in the backlog.
    fileprivate func acceptFailed(errno code: Int32) {
        guard let raw else { return }
        pauses += 1
        lastAcceptError = code
        evconnlistener_disable(raw)
        resume?.schedule(after: Listener.exhaustionPause)
        onPause?(code)
    }
}

/// libevent's accept callback: recovers the ``Listener`` from the context pointer.
private func acceptCallback(
    _ listener: OpaquePointer?, _ descriptor: Int32, _ address: UnsafeMutablePointer<sockaddr>?, _ length: Int32,
    _ context: UnsafeMutableRawPointer?
) {
    guard let context else {
        close(descriptor)
        return
    }
    var storage = sockaddr_storage()
    if let address {
        withUnsafeMutableBytes(of: &storage) { target in
            target.copyMemory(from: UnsafeRawBufferPointer(start: address, count: min(Int(length), target.count)))
        }
    }
    Unmanaged<Listener>.fromOpaque(context).takeUnretainedValue()
        .accept(descriptor, SocketAddress(storage: storage, length: length))
}

/// libevent's accept-error callback: recovers the ``Listener`` from the context pointer.
private func acceptErrorCallback(_ listener: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    let code = errno
    guard let context else { return }
    Unmanaged<Listener>.fromOpaque(context).takeUnretainedValue().acceptFailed(errno: code)
}
