import ATSPolicy

/// The tunnel's IPv4 network: the proxy is its first address, each device has one other of its own.
///
/// 10.65.84.0/24 ("AT" in ASCII, as the default upstream mark 0x4154 is) is private (RFC 1918) and
/// rarely a home or office LAN's; the tunnel carries the devices' every other address inside it.
package enum WireGuardNetwork {
    package static let prefix: (UInt8, UInt8, UInt8) = (10, 65, 84)
    /// The proxy's address inside the tunnel: the devices' DNS server, and where their TCP is redirected.
    package static let proxyAddress = "10.65.84.1"
    /// `10.65.84.0/24`.
    package static let cidr = "10.65.84.0/24"
    /// The last octets devices get, in order: .2 to .254 (253 devices).
    package static let deviceOctets: ClosedRange<UInt8> = 2...254

    /// `10.65.84.N`.
    package static func address(octet: UInt8) -> String { "10.65.84.\(octet)" }

    /// The last octet of `address` when it is a device address of this network; nil otherwise.
    package static func deviceOctet(of address: String) -> UInt8? {
        let parts = address.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "10", parts[1] == "65", parts[2] == "84", let octet = UInt8(parts[3]),
            String(octet) == parts[3], deviceOctets.contains(octet)
        else { return nil }
        return octet
    }
}
