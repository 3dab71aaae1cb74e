import ATSPolicy
import ArgumentParser
import ControlProtocol
import TextFormats

/// Where the daemon's control socket is: shared by the commands that talk to a running atsproxy.
struct ControlSocketOptions: ParsableArguments {
    @Option(help: "The daemon's control socket (its --control-socket).")
    var socket = ControlSocketOptions.defaultPath

    @Flag(help: "Print the daemon's JSON answer instead of text.")
    var json = false

    static let defaultPath = "/run/atsproxy/control.sock"

    /// Sends `command` and returns the daemon's answer, or the exit status after saying why there is none.
    func ask(_ command: ControlCommand, _ output: Output) -> Result<JSONValue, DaemonExit> {
        let bytes: [UInt8]
        do { bytes = try ControlClient.send(command, to: socket) } catch {
            output.error("atsproxyctl: \(error)")
            return .failure(DaemonExit(status: ExitStatus.unreachable))
        }
        let answer: JSONValue
        do { answer = try JSONValue(parsing: bytes) } catch {
            output.error("atsproxyctl: the daemon at \(socket) answered something that is not JSON (\(error))")
            return .failure(DaemonExit(status: ExitStatus.unreachable))
        }
        if json { output.line(answer.serialized) }
        guard answer["ok"]?.boolValue == true else {
            let reason = answer["error"]?.stringValue ?? "no reason given"
            if !json { output.error("atsproxyctl: \(command.rawValue) refused: \(reason)") }
            return .failure(DaemonExit(status: ExitStatus.findings))
        }
        return .success(answer)
    }
}

struct DaemonExit: Error {
    var status: Int32
}

/// The subcommands that talk to a running daemon, with the exit statuses they share.
enum DaemonCommandHelp {
    static let exitStatuses = """
        Exit status: 0 done; 1 the daemon refused (a reload keeps the running policy and says why); \
        3 no daemon answered on the socket.
        """

    /// The help's closing part for `command`: its exit statuses and how to call it, against the
    /// installed daemon's socket and against `make run`'s.
    static func footer(_ command: String) -> String {
        """
        \(exitStatuses)

        Examples:
          atsproxyctl \(command)
          atsproxyctl \(command) --socket .build/control.sock --json
        """
    }
}

/// A subcommand that sends one command to the daemon and describes its answer in words (or
/// prints it as JSON with `--json`).
protocol DaemonQuery: OutputCommand {
    static var command: ControlCommand { get }
    var socket: ControlSocketOptions { get }
    func describe(_ answer: JSONValue, to output: Output)
}

extension DaemonQuery {
    func execute(_ output: Output) -> Int32 {
        switch socket.ask(Self.command, output) {
        case .success(let answer):
            if !socket.json { describe(answer, to: output) }
            return ExitStatus.success
        case .failure(let exit):
            if Self.command == .reload, exit.status == ExitStatus.findings, !socket.json {
                output.error("The running policy and settings stay in force.")
            }
            return exit.status
        }
    }
}

/// `atsproxyctl reload`: the daemon re-reads its config file and policy and swaps them in for new
/// connections, or keeps the running ones and says why.
struct ReloadCommand: ParsableCommand, DaemonQuery {
    static let configuration = CommandConfiguration(
        commandName: "reload",
        abstract:
            "Re-read the daemon's config file and policy; apply them to new connections, or keep the running ones.",
        discussion: "Open tunnels and requests keep the policy they started with.\n\n"
            + DaemonCommandHelp.footer("reload"))
    static let command = ControlCommand.reload

    @OptionGroup var socket: ControlSocketOptions

    func describe(_ answer: JSONValue, to output: Output) { DaemonAnswerText.reload(answer, to: output) }
}

/// `atsproxyctl status`: what an operator needs at a glance.
struct StatusCommand: ParsableCommand, DaemonQuery {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the running daemon: listeners, mode, policy, connections, verdicts, last reload.",
        discussion: DaemonCommandHelp.footer("status"))
    static let command = ControlCommand.status

    @OptionGroup var socket: ControlSocketOptions

    func describe(_ answer: JSONValue, to output: Output) { DaemonAnswerText.status(answer, to: output) }
}

/// `atsproxyctl stats`: the counters, for monitoring (`--json` for machines).
struct StatsCommand: ParsableCommand, DaemonQuery {
    static let configuration = CommandConfiguration(
        commandName: "stats",
        abstract: "Print the daemon's counters: connections, requests by action, bytes, cached verdicts.",
        discussion: DaemonCommandHelp.footer("stats"))
    static let command = ControlCommand.stats

    @OptionGroup var socket: ControlSocketOptions

    func describe(_ answer: JSONValue, to output: Output) { DaemonAnswerText.counters(answer, to: output) }
}

/// `atsproxyctl flush-cache`: forget every cached verdict.
struct FlushCacheCommand: ParsableCommand, DaemonQuery {
    static let configuration = CommandConfiguration(
        commandName: "flush-cache",
        abstract: "Forget every cached verdict: the next connection to each host is probed again.",
        discussion: DaemonCommandHelp.footer("flush-cache"))
    static let command = ControlCommand.flushCache

    @OptionGroup var socket: ControlSocketOptions

    func describe(_ answer: JSONValue, to output: Output) {
        let dropped = answer["dropped"]?.intValue ?? 0
        output.line("Dropped \(dropped) cached verdict\(dropped == 1 ? "" : "s").")
    }
}

/// `atsproxyctl reopen-logs`: the daemon opens its log file again (for logrotate).
struct ReopenLogsCommand: ParsableCommand, DaemonQuery {
    static let configuration = CommandConfiguration(
        commandName: "reopen-logs",
        abstract: "Make the daemon open its log file again, after logrotate moved it (SIGUSR1 does the same).",
        discussion: DaemonCommandHelp.footer("reopen-logs"))
    static let command = ControlCommand.reopenLogs

    @OptionGroup var socket: ControlSocketOptions

    func describe(_ answer: JSONValue, to output: Output) {
        if let path = answer["log_file"]?.stringValue {
            output.line("Reopened the log file \(path).")
        } else {
            output.line("The daemon logs to standard output: there is no file to reopen.")
        }
    }
}

/// `atsproxyctl metrics`: the daemon's counters in Prometheus's text format, as the web listener's
/// `/metrics` serves them, read through the control socket (for scripts and CI without the web
/// listener, or a node_exporter textfile).
struct MetricsCommand: ParsableCommand, DaemonQuery {
    static let configuration = CommandConfiguration(
        commandName: "metrics",
        abstract: "Print the daemon's metrics in Prometheus's text format (what GET /metrics serves).",
        discussion: """
            Connections by action and by violation, intercepted requests, probes and their latency \
            histogram, the verdict cache, bytes, open connections per loop, leaves minted, reloads and \
            log write errors; every name starts with atsproxy_. With --json, the control socket's \
            answer, the text in its "text" field.

            """ + DaemonCommandHelp.footer("metrics") + """

                  atsproxyctl metrics --socket .build/control.sock > /var/lib/node_exporter/atsproxy.prom
                """)
    static let command = ControlCommand.metrics

    @OptionGroup var socket: ControlSocketOptions

    func describe(_ answer: JSONValue, to output: Output) { output.write(answer["text"]?.stringValue ?? "") }
}
