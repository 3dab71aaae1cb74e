import ATSPolicy
import EventLoop
import ProxyCore

/// The addresses a phone on the network can reach the proxy at, as `host:port`: each listener's
/// own, or for a wildcard listener (0.0.0.0, ::) every address of this host's interfaces; never
/// loopback or link-local ones, which no other device can use. What the start-up QR codes, the
/// onboarding page and `atsproxyctl onboard` show.
enum DeviceAddresses {
    static func of(listeners: [SocketAddress], interfaces: [IPAddress] = HostInterfaces.addresses()) -> [String] {
        var found: [String] = []
        for listener in listeners {
            guard let address = listener.ipAddress?.unmapped else { continue }
            let candidates: [IPAddress]
            if address == .v4(0) {
                candidates = interfaces.filter(\.isIPv4)
            } else if address == .v6(high: 0, low: 0) {
                // An IPv6 wildcard takes IPv4 clients too (unless bindv6only): IPv4 first, as phones prefer it on Wi-Fi.
                candidates = interfaces.filter(\.isIPv4) + interfaces.filter { !$0.isIPv4 }
            } else {
                candidates = [address]
            }
            for candidate in candidates where isReachableFromOtherDevices(candidate) {
                let text = "\(HostIdentity.address(candidate).urlForm):\(listener.port)"
                if !found.contains(text) { found.append(text) }
            }
        }
        return found
    }

    /// Not loopback, not link-local (fe80::/10, 169.254.0.0/16), not unspecified.
    static func isReachableFromOtherDevices(_ address: IPAddress) -> Bool {
        switch address.unmapped {
        case .v4(let value):
            return value >> 24 != 127 && value >> 16 != 0xA9FE && value != 0
        case .v6(let high, let low):
            return !(high == 0 && (low == 0 || low == 1)) && high >> 54 != 0x3FA
        }
    }
}
