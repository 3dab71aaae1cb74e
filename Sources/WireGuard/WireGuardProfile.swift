import ATSPolicy
import TLSInspection

/// One `.mobileconfig` that installs both what a device needs: the proxy's CA (for intercept mode)
/// and its WireGuard tunnel, as a VPN payload the WireGuard app runs (`com.apple.vpn.managed`,
/// `VPNSubType` `com.wireguard.ios`, the device's configuration as `WgQuickConfig`: the format
/// wireguard-apple's MOBILECONFIG.md documents). Installing it asks once; trusting the CA for TLS
/// is still the second switch under Certificate Trust Settings.
package enum WireGuardProfile {
    /// The profile's identifier: one per device, so that a device's new profile replaces its old one.
    package static func identifier(device: String) -> String { "atsproxy.wireguard.\(device)" }

    package static func mobileConfig(_ device: WireGuardDevice, authority: CertificateAuthority) -> [UInt8] {
        let identifier = identifier(device: device.name)
        let tunnelName = "atsproxy \(device.name)"
        let vpn: [(String, PropertyListValue)] = [
            ("PayloadDisplayName", .string("VPN")),
            ("PayloadType", .string("com.apple.vpn.managed")),
            ("PayloadVersion", .integer(1)),
            ("PayloadIdentifier", .string(identifier + ".vpn")),
            ("PayloadUUID", .string(authority.payloadUUID(for: identifier + ".vpn" + device.privateKey.base64))),
            ("UserDefinedName", .string(tunnelName)),
            ("VPNType", .string("VPN")),
            ("VPNSubType", .string("com.wireguard.ios")),
            ("VendorConfig", PropertyListValue.dictionary(ordered: [("WgQuickConfig", .string(device.configuration))])),
            (
                "VPN",
                PropertyListValue.dictionary(ordered: [
                    ("RemoteAddress", .string(device.endpoint)), ("AuthenticationMethod", .string("Password")),
                ])
            ),
        ]
        return authority.mobileConfig(
            identifier: identifier, displayName: "atsproxy: \(device.name) (CA and WireGuard)",
            description: """
                Sends every connection of this device through the atsproxy WireGuard tunnel \
                (\(tunnelName), in the WireGuard app) to the ATS proxy at \(device.endpoint), which judges \
                each as App Transport Security would.
                """,
            adding: [vpn])
    }
}
