/// What the proxy did with a connection: a line's `action`, the same on its request lines.
///
/// `blocked`: ATS would refuse the connection. `failed`: it could not be judged or carried (the
/// request was unreadable, the upstream unreachable; `failure` says which). `denied`: the proxy
/// refuses the client or the destination whatever ATS says (`--allow-client`,
/// `--allow-destination`, a loop), and the line says nothing about the app's ATS needs.
package enum Action: String, Sendable, CaseIterable {
    case allowed, blocked, failed, denied
}
