import ArgumentParser
import ControlProtocol
import TextFormats

/// `atsproxyctl passthrough list|clear`: the hosts intercept mode passes through for a device that
/// kept refusing the minted certificate, and forgetting them.
struct PassthroughCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "passthrough",
        abstract: "List or clear the hosts intercept mode passes through for a device that refused its certificate.",
        discussion: """
            A device that refuses the proxy's certificate for a host (a certificate alert, or a handshake \
            closed before any request) three times \
            gets that host passed through from then on: judged by a probe, relayed unread. Other devices \
            are still intercepted. Once the device trusts the atsproxy CA, clear the list.

            \(DaemonCommandHelp.exitStatuses)

            Examples:
              atsproxyctl passthrough list
              atsproxyctl passthrough clear --socket .build/control.sock
            """,
        subcommands: [PassthroughListCommand.self, PassthroughClearCommand.self])
}

/// `atsproxyctl passthrough list`.
struct PassthroughListCommand: ParsableCommand, DaemonQuery {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the hosts passed through for a device, with the device's address and its refusals.",
        discussion: DaemonCommandHelp.footer("passthrough list"))
    static let command = ControlCommand.passthroughList

    @OptionGroup var socket: ControlSocketOptions

    func describe(_ answer: JSONValue, to output: Output) {
        guard case .array(let pairs)? = answer["passed_through_after_rejections"], !pairs.isEmpty else {
            return output.line("No host is passed through after a device refused its certificate.")
        }
        for pair in pairs {
            let host = pair["host"]?.stringValue ?? "?"
            let client = pair["client"]?.stringValue ?? "?"
            let count = pair["rejections"]?.intValue ?? 0
            output.line("\(host) for \(client): \(count) refusal\(count == 1 ? "" : "s") of the certificate")
        }
    }
}

/// `atsproxyctl passthrough clear`.
struct PassthroughClearCommand: ParsableCommand, DaemonQuery {
    static let configuration = CommandConfiguration(
        commandName: "clear",
        abstract: "Forget every device's refusals: each host is intercepted again for every device.",
        discussion: DaemonCommandHelp.footer("passthrough clear"))
    static let command = ControlCommand.passthroughClear

    @OptionGroup var socket: ControlSocketOptions

    func describe(_ answer: JSONValue, to output: Output) {
        let cleared = answer["cleared"]?.intValue ?? 0
        output.line(
            "Cleared \(cleared) passed-through host\(cleared == 1 ? "" : "s"); every host is intercepted again.")
    }
}
