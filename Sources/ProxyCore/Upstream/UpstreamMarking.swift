import ATSPolicy
import EventLoop
import POSIX

/// How the proxy's own upstream connections are told from devices' in transparent mode: each
/// carries a firewall mark (`SO_MARK`, set before its SYN) that the redirect rules exempt, and while
/// it is open its addresses are listed (``opening``), so that a rule without the exemption, which
/// sends that very connection back to the transparent listener, is caught at once (the session's
/// `redirect_loop`) instead of going round through the proxy.
package struct UpstreamMarking: Sendable {
    /// `--upstream-mark`.
    package var mark: UInt32
    /// The proxy's upstream connections open now: one set for every loop of a daemon.
    package let opening: OpeningConnections

    package init(mark: UInt32, opening: OpeningConnections) {
        self.mark = mark
        self.opening = opening
    }
}

/// The proxy's upstream connections while they are open (from their connect to their close), by
/// their two ends: a connection the firewall sent back to the proxy arrives from the same local
/// address, bound for the same original destination. Both ends together, so a local program that
/// happens to use the same source port for another server is not mistaken for one.
package final class OpeningConnections: Sendable {
    private let connections = Locked<Set<String>>([])

    package init() {}

    func insert(local: SocketAddress, remote: SocketAddress) {
        let key = Self.key(local, remote)
        _ = connections.withLock { $0.insert(key) }
    }

    func remove(local: SocketAddress, remote: SocketAddress) {
        let key = Self.key(local, remote)
        _ = connections.withLock { $0.remove(key) }
    }

    /// Whether a connection from `peer` to `original` is one of the proxy's own: a device's never is.
    package func contains(peer: SocketAddress, original: SocketAddress) -> Bool {
        let key = Self.key(peer, original)
        return connections.withLock { $0.contains(key) }
    }

    private static func key(_ local: SocketAddress, _ remote: SocketAddress) -> String {
        key(local) + " > " + key(remote)
    }

    /// The address and port, an IPv4 client of a dual-stack listener (`::ffff:a.b.c.d`) as IPv4.
    private static func key(_ address: SocketAddress) -> String {
        let ip = address.withAddressBytes { IPAddress(networkBytes: $0) }?.unmapped
        return "\(ip.map(String.init(describing:)) ?? address.description) \(address.port)"
    }
}
