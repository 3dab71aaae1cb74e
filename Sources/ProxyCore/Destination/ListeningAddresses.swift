import EventLoop
import Synchronization

/// The addresses the proxy's listeners are bound to (with the ports the kernel chose for port 0),
/// shared by every loop: only the listening loop binds them, and every loop's sessions must
/// refuse a request addressed to them (``DestinationRules``).
public final class ListeningAddresses: Sendable {
    private let addresses = Mutex<[SocketAddress]>([])

    public init() {}

    /// Set by the listening loop once its listeners are bound.
    func publish(_ bound: [SocketAddress]) { addresses.withLock { $0 = bound } }

    var current: [SocketAddress] { addresses.withLock { $0 } }
}
