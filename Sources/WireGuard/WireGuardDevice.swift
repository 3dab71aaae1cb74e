import TextFormats

/// One phone or tablet that reaches the proxy through WireGuard: what `add-device` made and its
/// `.conf` holds (wg-quick's format, which the WireGuard app imports as a file or a QR code).
package struct WireGuardDevice: Sendable, Equatable {
    package var name: String
    /// The last octet of its tunnel address (``WireGuardNetwork``).
    package var octet: UInt8
    package var privateKey: WireGuardKey
    /// The proxy's public key, which the device's `[Peer]` names.
    package var serverPublicKey: WireGuardKey
    /// Where the device sends its WireGuard packets: the proxy machine's address and UDP port.
    package var endpoint: String

    package init(
        name: String, octet: UInt8, privateKey: WireGuardKey, serverPublicKey: WireGuardKey, endpoint: String
    ) {
        self.name = name
        self.octet = octet
        self.privateKey = privateKey
        self.serverPublicKey = serverPublicKey
        self.endpoint = endpoint
    }

    /// `10.65.84.N`: the address its lines' `client` has, which names it.
    package var address: String { WireGuardNetwork.address(octet: octet) }

    /// The device's configuration as wg-quick and the WireGuard apps read it. Every address goes
    /// into the tunnel (IPv6 too, so an app cannot leave around it); DNS is the proxy's, which
    /// forwards it; the keepalive holds a phone's NAT mapping open.
    package var configuration: String {
        """
        # atsproxy WireGuard device \(name) (atsproxyctl wireguard add-device; docs/capture.md)
        [Interface]
        PrivateKey = \(privateKey.base64)
        Address = \(address)/32
        DNS = \(WireGuardNetwork.proxyAddress)

        [Peer]
        PublicKey = \(serverPublicKey.base64)
        Endpoint = \(endpoint)
        AllowedIPs = 0.0.0.0/0, ::/0
        PersistentKeepalive = 25

        """
    }

    /// Reads a device's `.conf` back (`name` is the file's); what is wrong names the line.
    package init(name: String, configuration text: String) throws(WireGuardStateError.Problem) {
        var values: [String: (value: String, line: Int)] = [:]
        var section = ""
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingWhitespace
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("[") {
                section = String(line)
                continue
            }
            guard let equals = line.firstIndex(of: "=") else {
                throw .malformed(line: index + 1, "not a Key = Value line")
            }
            let key = section + line[..<equals].trimmingWhitespace
            values[key] = (String(line[line.index(after: equals)...].trimmingWhitespace), index + 1)
        }
        func value(_ key: String) throws(WireGuardStateError.Problem) -> (value: String, line: Int) {
            guard let found = values[key] else { throw .malformed(line: nil, "no \(key)") }
            return found
        }
        let privateKey = try value("[Interface]PrivateKey")
        guard let key = WireGuardKey(base64: privateKey.value) else {
            throw .malformed(line: privateKey.line, "PrivateKey is not a base64 key of 32 bytes")
        }
        let address = try value("[Interface]Address")
        guard address.value.hasSuffix("/32"),
            let octet = WireGuardNetwork.deviceOctet(of: String(address.value.dropLast(3)))
        else {
            throw .malformed(line: address.line, "Address is not a device address of \(WireGuardNetwork.cidr) (/32)")
        }
        let server = try value("[Peer]PublicKey")
        guard let serverKey = WireGuardKey(base64: server.value) else {
            throw .malformed(line: server.line, "PublicKey is not a base64 key of 32 bytes")
        }
        self.init(
            name: name, octet: octet, privateKey: key, serverPublicKey: serverKey,
            endpoint: try value("[Peer]Endpoint").value)
    }
}
