import ATSPolicy
import EventLoop
import LogRecord
import ProxyCore
import WireGuard

/// `--wireguard-listen` and its companions: where phones send their WireGuard packets, where the
/// keys and devices are kept, and the interface the tunnel is.
package struct WireGuardSettings: Sendable {
    /// The UDP address WireGuard listens on (its port; WireGuard binds every address).
    package var listen: SocketAddress
    package var directory: WireGuardDirectory
    package var interface: String

    /// The tunnel's network (``WireGuardNetwork``), whose clients the proxy serves: WireGuard lets
    /// in only the devices' keys.
    package static let network = try! AddressRange(parsing: WireGuardNetwork.cidr)

    /// The listener the devices' TCP is redirected to: the proxy's tunnel address, on the port
    /// WireGuard has for UDP (TCP's ports are apart), so it needs no setting of its own.
    package var listener: ListenEndpoint {
        ListenEndpoint(
            address: try! SocketAddress(parsing: "\(WireGuardNetwork.proxyAddress):\(listen.port)"), capture: .wireguard
        )
    }
}
