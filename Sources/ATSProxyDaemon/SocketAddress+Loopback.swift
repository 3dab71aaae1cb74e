import ATSPolicy
import EventLoop
import ProxyCore

extension SocketAddress {
    /// The address without its port (nil for a socket that is not IP).
    var ipAddress: IPAddress? { withAddressBytes { IPAddress(networkBytes: $0) } }

    /// Whether only this machine can reach it: 127.0.0.0/8 or ::1 (a wildcard is not).
    var isLoopback: Bool {
        guard let address = ipAddress?.unmapped else { return false }
        return ProxySettings.loopback.contains { $0.contains(address) }
    }
}
