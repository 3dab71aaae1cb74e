import TLSInspection

/// The proxy's side of the tunnel in `wg setconf`'s format: its key and port, and each device as a
/// peer that may send only from its own address, so that the address names the device.
package enum WireGuardServerConfiguration {
    package static func text(privateKey: WireGuardKey, listenPort: UInt16, devices: [WireGuardDevice])
        throws(X25519.KeyError) -> String
    {
        var text = "[Interface]\nPrivateKey = \(privateKey.base64)\nListenPort = \(listenPort)\n"
        for device in devices {
            text += "\n# \(device.name)\n[Peer]\nPublicKey = \(try device.privateKey.publicKey().base64)\n"
            text += "AllowedIPs = \(device.address)/32\n"
        }
        return text
    }
}
