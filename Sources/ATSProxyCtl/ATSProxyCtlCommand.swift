import ArgumentParser
import ControlProtocol
import ATSPolicy

/// `atsproxyctl`: the control and policy CLI of atsproxy.
public struct ATSProxyCtlCommand: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "atsproxyctl",
        abstract: "Check, explain and diagnose App Transport Security policies, and control atsproxy.",
        discussion: """
            Exit status: 0 success; 1 findings with --strict, a server that needs an exception (diagnose), \
            or the daemon refused; 2 a missing, unreadable or invalid file, host, URL or option; 3 no daemon \
            answered on the control socket, or diagnose could not reach the server.
            """,
        version: ATSProxyVersion.current,
        subcommands: [
            CheckCommand.self, ExplainCommand.self, DiagnoseCommand.self, ReportCommand.self, StatusCommand.self,
            ReloadCommand.self, StatsCommand.self, FlushCacheCommand.self, ReopenLogsCommand.self,
        ]
    )

    public init() {}
}

/// Runs `atsproxyctl` with `arguments` (without the program name), the way `main` does.
public enum ATSProxyCtl {
    public struct Result: Sendable {
        public var exitCode: Int32
        public var standardOutput: String
        public var standardError: String
    }

    /// Parses and runs a command with buffered output: what tests call.
    public static func run(_ arguments: [String]) -> Result {
        let output = Output()
        let code = run(arguments, output: output)
        return Result(exitCode: code, standardOutput: output.standardOutput, standardError: output.standardError)
    }

    /// Parses and runs a command, writing to `output`.
    public static func run(_ arguments: [String], output: Output) -> Int32 {
        do {
            let command = try ATSProxyCtlCommand.parseAsRoot(arguments)
            guard let runnable = command as? any OutputCommand else {
                // The root command alone: show help, as `git` does.
                output.write(ATSProxyCtlCommand.helpMessage() + "\n")
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
}
