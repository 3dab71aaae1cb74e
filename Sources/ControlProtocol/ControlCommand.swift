/// The commands of the daemon's control socket.
///
/// The protocol, for scripts as much as for `atsproxyctl`: connect to the Unix socket
/// (`--control-socket`, default `/run/atsproxy/control.sock`), send one line holding a command name
/// and a newline, and read one line of JSON; the daemon then closes the connection. Every answer is
/// an object with `"ok"` (bool) and `"command"`; a refusal carries `"error"` with the reason.
///
///     $ printf 'status\n' | socat - UNIX-CONNECT:/run/atsproxy/control.sock
///     {"ok":true,"command":"status","version":"0.2.0",...}
package enum ControlCommand: String, Sendable, CaseIterable {
    /// Re-read the config file and the policy; swap them in for new connections, or keep the
    /// running ones and say why not.
    case reload
    /// What an operator needs at a glance: listeners, mode, policy, counters, last reload.
    case status
    /// The counters alone, for monitoring.
    case stats
    /// Every counter and gauge in Prometheus's text format, as the answer's `"text"` (what the
    /// web listener's `GET /metrics` serves), for scripts and CI without the web listener.
    case metrics
    /// Forget every cached verdict: the next connection to each host is probed again.
    case flushCache = "flush-cache"
    /// Open the log file again (after logrotate moved it).
    case reopenLogs = "reopen-logs"
    /// The hosts intercept mode passes through for a device that kept refusing the minted
    /// certificate, each with the device's address and its count.
    case passthroughList = "passthrough-list"
    /// Forget those counts: every device's next connection to each host is intercepted again.
    case passthroughClear = "passthrough-clear"

    /// The longest request line the daemon reads (a command and its newline, with room to spare).
    package static let maximumRequestBytes = 256
}

/// atsproxy's version, shown by `status` and `--version`.
package enum ATSProxyVersion {
    package static let current = "0.2.0"
}
