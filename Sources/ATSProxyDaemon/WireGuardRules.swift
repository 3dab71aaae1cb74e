import WireGuard

/// The nftables table the daemon applies for its WireGuard tunnel, and deletes when it stops:
/// what the devices send through the tunnel, by kind.
/// - TCP to ports 80 and 443 (the ports of the HTTP that ATS governs) goes to the proxy's
///   listener in the tunnel, which judges it as transparent mode does.
/// - DNS (port 53, UDP and TCP, to any server) goes to the proxy's resolver in the tunnel
///   (``TunnelResolver``), which answers from --hosts-file or forwards, and records the names.
/// - UDP 443 (QUIC) is refused at once, so apps fall back to TCP, where they are judged.
/// - Everything else is forwarded, masqueraded, when the host forwards (net.ipv4.ip_forward).
struct WireGuardRules {
    var interface: String
    var listenerPort: UInt16

    static let table = "atsproxy_wireguard"

    var script: String {
        let interface = "\"\(interface)\""
        let redirect = [
            "iifname \(interface) meta l4proto { udp, tcp } th dport 53 redirect to :53",
            "iifname \(interface) ip daddr != \(WireGuardNetwork.proxyAddress) tcp dport { 80, 443 } redirect to :\(listenerPort)",
        ]
        let refuseQUIC = ["iifname \(interface) udp dport 443 reject"]
        return """
            table inet \(Self.table)
            delete table inet \(Self.table)
            table inet \(Self.table) {
            \(chain("prerouting", "type nat hook prerouting priority dstnat", redirect))
            \(chain("input", "type filter hook input priority filter", refuseQUIC))
            \(chain("forward", "type filter hook forward priority filter", refuseQUIC))
            \(chain("postrouting", "type nat hook postrouting priority srcnat", ["iifname \(interface) oifname != \(interface) masquerade"]))
            }

            """
    }

    /// Deletes the table (`nft -f -`).
    static let deletion = "delete table inet \(table)\n"

    private func chain(_ name: String, _ hook: String, _ rules: [String]) -> String {
        (["    chain \(name) {", "        \(hook); policy accept;"] + rules.map { "        " + $0 } + ["    }"])
            .joined(separator: "\n")
    }
}
