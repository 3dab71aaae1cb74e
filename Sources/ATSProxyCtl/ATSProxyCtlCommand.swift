import ATSPolicy
import ArgumentParser
import ControlProtocol

/// `atsproxyctl`: the control and policy CLI of atsproxy.
package struct ATSProxyCtlCommand: ParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "atsproxyctl",
        abstract: "Check, explain and diagnose App Transport Security policies, and control atsproxy.",
        discussion: """
            Exit status: 0 success; 1 findings with --strict, a server that needs an exception (diagnose), \
            or the daemon refused; 2 a missing, unreadable or invalid file, host, URL or option; 3 no daemon \
            answered on the control socket, or diagnose could not reach the server.
            """,
        version: ATSProxyVersion.current,
        subcommands: [
            CheckCommand.self, ExplainCommand.self, DiagnoseCommand.self, ReportCommand.self, HarCommand.self,
            StatusCommand.self, OnboardCommand.self, ReloadCommand.self, StatsCommand.self, MetricsCommand.self,
            FlushCacheCommand.self, PassthroughCommand.self,
            ReopenLogsCommand.self,
            CACommand.self, CaptureCommand.self, WireGuardCommand.self,
        ]
    )

    package init() {}
}

/// Runs `atsproxyctl` with `arguments` (without the program name), the way `main` does.
package enum ATSProxyCtl {
    package struct Result: Sendable {
        package var exitCode: Int32
        package var standardOutput: String
        package var standardError: String
        /// Standard output as written, for binary output (`ca export --format der`).
        package var standardOutputBytes: [UInt8]
    }

    /// Parses and runs a command with buffered output: what tests call.
    package static func run(_ arguments: [String]) -> Result {
        let output = Output()
        let code = run(arguments, output: output)
        return Result(
            exitCode: code, standardOutput: output.standardOutput, standardError: output.standardError,
            standardOutputBytes: output.standardOutputBytes)
    }

    /// Parses and runs a command, writing to `output`.
    package static func run(_ arguments: [String], output: Output) -> Int32 {
        if let message = unknownSubcommand(in: arguments) {
            output.error(message)
            return ExitStatus.badInput
        }
        do {
            var command = try ATSProxyCtlCommand.parseAsRoot(arguments)
            guard let runnable = command as? any OutputCommand else {
                // `SUB --help`, `help SUB` and the root alone parse to commands whose run() throws the
                // help screen of the command they name (ArgumentParser's help command, or the root's
                // default run): run it as ArgumentParser's own main would, and print what it throws.
                try command.run()
                return ExitStatus.success
            }
            return runnable.execute(output)
        } catch {
            let code = ATSProxyCtlCommand.exitCode(for: error)
            let message = ATSProxyCtlCommand.fullMessage(for: error)
            if code == .success {
                output.write(message + "\n")
                return ExitStatus.success
            }
            output.error(message)
            // Usage errors exit 2 like every other bad input, not ArgumentParser's 64.
            return ExitStatus.badInput
        }
    }

    /// For `NAME …` or `help NAME` where NAME is no subcommand: the error, with the closest name.
    /// (ArgumentParser shows the top-level help for `help NAME`, as if nothing were wrong.)
    static func unknownSubcommand(in arguments: [String]) -> String? {
        let names = ATSProxyCtlCommand.configuration.subcommands.compactMap { $0.configuration.commandName } + ["help"]
        let named = arguments.first == "help" ? arguments.dropFirst().first : arguments.first
        guard let named, !named.hasPrefix("-"), !names.contains(named) else { return nil }
        let closest = names.map { (name: $0, distance: KeySuggestions.editDistance(named.lowercased(), $0)) }
            .filter { $0.distance <= 2 }.min { $0.distance < $1.distance }
        return "Error: no subcommand '\(named)'" + (closest.map { "; did you mean '\($0.name)'?" } ?? "")
            + "\n  See 'atsproxyctl --help' for the subcommands."
    }
}
