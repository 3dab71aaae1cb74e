/// How a connection reached the proxy: a line's `capture`. Docs/log-format.md lists the values:
/// values may be added, never renamed.
package enum CapturePath: String, Sendable, CaseIterable {
    /// The device's HTTP proxy setting: a CONNECT, or an absolute `http://` request.
    case proxy
    /// The firewall of the device's router redirected the connection to `--transparent-listen`
    /// (nftables `REDIRECT` or `TPROXY`): the app did not use a proxy, and ATS judged what it dialled.
    case transparent
    /// A WireGuard peer of `--wireguard-listen` (a phone with the WireGuard app): its TCP was
    /// redirected from the tunnel's interface to the proxy, and the line's `device` names the peer.
    case wireguard
}
