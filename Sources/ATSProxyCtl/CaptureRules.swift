import ATSPolicy

/// The nftables rules that send devices' TCP to atsproxy's transparent listener (docs/capture.md):
/// one table, `inet atsproxy`, made anew each time the script is applied.
struct CaptureRules {
    /// Whose traffic is redirected.
    enum Source {
        /// A router's or hotspot's: what arrives on these interfaces (prerouting).
        case interfaces([String])
        /// This machine's own programs (output), or one user's; the proxy's marked connections are exempt.
        case local(user: String?)
    }

    /// atsproxy's `--upstream-mark` default (0x4154), which the daemon shares.
    static let defaultMark: UInt32 = 0x4154

    var source: Source
    var port: UInt16
    var mark: UInt32
    var tcpPorts: [UInt16]
    var destinations: [AddressRange]
    var refusesQUIC: Bool

    /// The script for `nft -f`.
    var script: String {
        var lines = [
            "#!/usr/sbin/nft -f",
            "# atsproxy transparent mode (docs/capture.md). Apply as root: nft -f FILE (or pipe to nft -f -).",
            "# Undo: nft delete table inet atsproxy",
            "# atsproxy must listen with --transparent-listen on port \(port)"
                + (isLocal ? " and mark its connections with --upstream-mark \(mark)." : "."),
            // Declaring, then deleting, makes applying the script again replace the table, not fail.
            "table inet atsproxy",
            "delete table inet atsproxy",
            "table inet atsproxy {",
        ]
        switch source {
        case .interfaces(let names):
            lines += chain(
                "prerouting", hook: "type nat hook prerouting priority dstnat",
                rules: names.flatMap { name in redirects(match: "iifname \(Self.quoted(name))") })
            if refusesQUIC {
                lines += chain(
                    "forward", hook: "type filter hook forward priority filter",
                    rules: names.flatMap { name in quicRefusals(match: "iifname \(Self.quoted(name))") })
            }
        case .local(let user):
            let owner = user.map { "meta skuid \(Self.quoted($0))" } ?? ""
            // The exemption first: without it every connection of the proxy's would come back to it.
            let exemption = "meta mark \(mark) return"
            lines += chain(
                "output", hook: "type nat hook output priority -100",
                rules: [exemption] + redirects(match: owner))
            if refusesQUIC {
                lines += chain(
                    "output_quic", hook: "type filter hook output priority filter",
                    rules: [exemption] + quicRefusals(match: owner))
            }
        }
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }

    private var isLocal: Bool { if case .local = source { true } else { false } }

    /// One chain of the table, its rules indented.
    private func chain(_ name: String, hook: String, rules: [String]) -> [String] {
        ["    chain \(name) {", "        \(hook); policy accept;"] + rules.map { "        " + $0 } + ["    }"]
    }

    /// The redirect rules for packets matching `match`: one per address family the destinations
    /// name (one for both when they name none).
    private func redirects(match: String) -> [String] {
        let ports =
            tcpPorts.count == 1 ? "\(tcpPorts[0])" : "{ " + tcpPorts.map(String.init).joined(separator: ", ") + " }"
        return destinationMatches.map { destination in
            [match, destination, "tcp dport \(ports)", "redirect to :\(port)"].filter { !$0.isEmpty }
                .joined(separator: " ")
        }
    }

    private func quicRefusals(match: String) -> [String] {
        destinationMatches.map { destination in
            [match, destination, "udp dport 443", "reject"].filter { !$0.isEmpty }.joined(separator: " ")
        }
    }

    /// `ip daddr { … }` and `ip6 daddr { … }` for the destinations, or one empty match for all.
    private var destinationMatches: [String] {
        guard !destinations.isEmpty else { return [""] }
        let v4 = destinations.filter { $0.network.isIPv4 }.map(\.description)
        let v6 = destinations.filter { !$0.network.isIPv4 }.map(\.description)
        return [("ip", v4), ("ip6", v6)].compactMap { family, ranges in
            ranges.isEmpty ? nil : "\(family) daddr { \(ranges.joined(separator: ", ")) }"
        }
    }

    /// A name in nftables' double quotes (interface and user names hold no quote: validated).
    static func quoted(_ name: String) -> String { "\"\(name)\"" }

    /// Linux's interface names: at most 15 bytes (IFNAMSIZ - 1) of letters, digits, '.', '_', '-'.
    static func isInterfaceName(_ name: String) -> Bool {
        (1...15).contains(name.utf8.count)
            && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }
    }

    /// A user name (as useradd takes them) or a uid.
    static func isUserName(_ name: String) -> Bool {
        (1...32).contains(name.utf8.count) && name.first != "-"
            && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }
    }
}
