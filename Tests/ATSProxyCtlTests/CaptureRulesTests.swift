import ATSProxyCtl
import Foundation
import Testing

/// `atsproxyctl capture rules`: the script for each setup, and a clear error for each bad option.
/// (TransparentCaptureProcessTests applies the scripts with nft in a namespace and sends traffic
/// through them.)
@Suite("atsproxyctl capture rules")
struct CaptureRulesTests {
    /// (arguments, lines the script must hold, lines it must not)
    static let scripts: [([String], [String], [String])] = [
        (
            ["--interface", "wlan0"],
            [
                "table inet atsproxy", "delete table inet atsproxy",
                #"iifname "wlan0" tcp dport { 80, 443 } redirect to :8443"#, #"iifname "wlan0" udp dport 443 reject"#,
                "type nat hook prerouting priority dstnat; policy accept;",
            ],
            ["meta mark"]
        ),
        (
            ["--interface", "wlan0", "--interface", "usb0", "--tcp-port", "443", "--port", "9443", "--keep-quic"],
            [#"iifname "wlan0" tcp dport 443 redirect to :9443"#, #"iifname "usb0" tcp dport 443 redirect to :9443"#],
            ["udp dport 443 reject", "chain forward"]
        ),
        (
            ["--local"],
            ["meta mark 16724 return", "tcp dport { 80, 443 } redirect to :8443", "udp dport 443 reject"],
            ["iifname", "skuid"]
        ),
        (
            ["--local", "--user", "tester", "--mark", "7", "--destination", "10.0.0.0/8", "--destination", "fd00::/8"],
            [
                "meta mark 7 return",
                #"meta skuid "tester" ip daddr { 10.0.0.0/8 } tcp dport { 80, 443 } redirect to :8443"#,
                #"meta skuid "tester" ip6 daddr { fd00::/8 } tcp dport { 80, 443 } redirect to :8443"#,
            ],
            ["16724"]
        ),
    ]

    @Test("each setup's script", arguments: scripts)
    func script(_ arguments: [String], _ present: [String], _ absent: [String]) {
        let result = ATSProxyCtl.run(["capture", "rules"] + arguments)
        #expect(result.exitCode == 0, "\(result.standardError)")
        let lines = result.standardOutput.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        for line in present { #expect(lines.contains(line), "\(line) in \(result.standardOutput)") }
        for text in absent { #expect(!result.standardOutput.contains(text), "\(text) in \(result.standardOutput)") }
    }

    /// (arguments, the error's words)
    static let mistakes: [([String], String)] = [
        ([], "name --interface IFACE (a router or hotspot) or --local (this machine)"),
        (["--interface", "wlan0", "--local"], "--interface and --local are two setups: give one"),
        (["--interface", "wlan0", "--user", "tester"], "--user applies to --local only"),
        (["--interface", "wlan0; flush ruleset"], "not an interface name"),
        (["--interface", "a-name-too-long-for-linux"], "not an interface name"),
        (["--local", "--user", "te\"ster"], "--user te\"ster: not a user name or uid"),
        (["--local", "--port", "0"], "--port 0"),
        (["--local", "--mark", "0"], "--mark 0"),
        (["--local", "--tcp-port", "0"], "--tcp-port 0 is no port"),
        (["--local", "--destination", "10.0.0.0"], "--destination 10.0.0.0: no /prefix length"),
    ]

    @Test("a bad option is exit 2 with the option and what is wrong", arguments: mistakes)
    func mistake(_ arguments: [String], _ words: String) {
        let result = ATSProxyCtl.run(["capture", "rules"] + arguments)
        #expect(result.exitCode == 2)
        #expect(result.standardOutput.isEmpty)
        #expect(result.standardError.contains(words), "\(result.standardError)")
    }
}
