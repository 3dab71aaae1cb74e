import ATSPolicy
import ArgumentParser

/// `atsproxyctl capture`: what a machine needs to send devices' traffic into transparent mode.
struct CaptureCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "capture",
        abstract: "Print the firewall rules that send devices' traffic into atsproxy's transparent listener.",
        discussion: """
            Transparent mode (atsproxy --transparent-listen) judges connections a firewall redirected \
            to it: apps that ignore the proxy setting, connections to hard-coded addresses. docs/capture.md \
            walks through a Linux hotspot.

            Examples:
              atsproxyctl capture rules --interface wlan0 | nft -f -
              atsproxyctl capture rules --local --user tester --port 15001
            """,
        subcommands: [CaptureRulesCommand.self])
}

/// `atsproxyctl capture rules (--interface IFACE … | --local) [options]`
struct CaptureRulesCommand: ParsableCommand, OutputCommand {
    static let configuration = CommandConfiguration(
        commandName: "rules",
        abstract: "Print nftables rules that redirect devices' TCP to atsproxy's transparent listener.",
        discussion: """
            The rules are one nftables table, inet atsproxy, for IPv4 and IPv6: applying them again \
            replaces it, and `nft delete table inet atsproxy` undoes them. Apply them as root with \
            `nft -f -`; print and read them first.

            --interface IFACE (a router or hotspot): TCP arriving on that interface for the --tcp-port \
            ports is redirected (prerouting). The proxy's own connections leave through the output chain \
            and are not touched.
            --local (this machine's own programs, a simulator or a test runner): TCP leaving this machine \
            is redirected (output), except the proxy's own connections, which carry --mark (atsproxy \
            --upstream-mark; the same default). --user limits it to one user's programs.

            UDP to port 443 (QUIC) from the same devices is refused, so apps fall back to TCP, where \
            ATS applies and the proxy sees them; --keep-quic leaves it.

            Exit status: 0 printed; 2 a bad option.

            Examples:
              atsproxyctl capture rules --interface wlan0
              atsproxyctl capture rules --interface wlan0 --tcp-port 443 --tcp-port 8443 | nft -f -
              atsproxyctl capture rules --local --user tester --destination 10.77.0.0/24
            """)

    @Option(name: .customLong("interface"), help: "A network interface the devices' traffic arrives on (repeatable).")
    var interfaces: [String] = []

    @Flag(help: "Redirect this machine's own outgoing TCP instead (the output chain).")
    var local = false

    @Option(help: "With --local: only this user's programs (a name or a uid).")
    var user: String?

    @Option(help: "The transparent listener's port (atsproxy --transparent-listen ADDR:PORT).")
    var port: UInt16 = 8443

    @Option(help: "The mark of the proxy's own connections (atsproxy --upstream-mark).")
    var mark: UInt32 = CaptureRules.defaultMark

    @Option(name: .customLong("tcp-port"), help: "A destination port to redirect (repeatable; default 80 and 443).")
    var tcpPorts: [UInt16] = []

    @Option(
        name: .customLong("destination"), help: "Only traffic to this CIDR range (repeatable; default every address).")
    var destinations: [String] = []

    @Flag(help: "Do not refuse UDP 443 (QUIC): apps that use HTTP/3 then bypass the proxy.")
    var keepQuic = false

    func validate() throws {
        guard !interfaces.isEmpty || local else {
            throw ValidationError("name --interface IFACE (a router or hotspot) or --local (this machine)")
        }
        if !interfaces.isEmpty, local { throw ValidationError("--interface and --local are two setups: give one") }
        if user != nil, !local { throw ValidationError("--user applies to --local only") }
        for name in interfaces where !CaptureRules.isInterfaceName(name) {
            throw ValidationError(
                "--interface \(name): not an interface name (1 to 15 of a-z, A-Z, 0-9, '.', '_', '-')")
        }
        if let user, !CaptureRules.isUserName(user) {
            throw ValidationError("--user \(user): not a user name or uid")
        }
        guard port > 0 else { throw ValidationError("--port 0: give the port the transparent listener binds") }
        guard mark > 0 else { throw ValidationError("--mark 0: packets carry no mark by default; give 1 or more") }
        if tcpPorts.contains(0) { throw ValidationError("--tcp-port 0 is no port") }
        for text in destinations {
            do { _ = try AddressRange(parsing: text) } catch {
                throw ValidationError("--destination \(text): \(error)")
            }
        }
    }

    func execute(_ output: Output) -> Int32 {
        let rules = CaptureRules(
            source: local ? .local(user: user) : .interfaces(interfaces), port: port, mark: mark,
            tcpPorts: tcpPorts.isEmpty ? [80, 443] : tcpPorts,
            destinations: destinations.compactMap { try? AddressRange(parsing: $0) }, refusesQUIC: !keepQuic)
        output.write(rules.script)
        return ExitStatus.success
    }
}
