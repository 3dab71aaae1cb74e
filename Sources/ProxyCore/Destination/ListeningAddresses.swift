import EventLoop
import POSIX

/// The addresses the proxy's listeners are bound to (with the ports the kernel chose for port 0),
/// shared by every loop: only the listening loop binds them, and every loop's sessions must
/// refuse a request addressed to them (``DestinationRules``).
package final class ListeningAddresses: Sendable {
    private let addresses = Locked<[SocketAddress]>([])

    package init() {}

    /// Set by the listening loop once its listeners are bound.
    func publish(_ bound: [SocketAddress]) {
        addresses.withLock { $0 = bound + $0.filter { old in !bound.contains { $0.description == old.description } } }
    }

    /// Adds another listener of the process that no request may be sent to: the web listener, which
    /// trusts loopback clients, and the proxy is one whenever it connects.
    package func include(_ address: SocketAddress) { addresses.withLock { $0.append(address) } }

    var current: [SocketAddress] { addresses.withLock { $0 } }
}
