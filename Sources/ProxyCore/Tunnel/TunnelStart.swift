/// When a CONNECT judged by a probe (tunnel mode, and the hosts intercept mode passes through at
/// the CONNECT: pinned or `--passthrough`) to a host whose verdict is not known yet gets its `200`. Either way
/// nothing the server sends reaches the device before the verdict, a cached verdict that blocks
/// is a `403` at the CONNECT, and the tunnel's own connection opens while the probe runs
/// (``EarlyUpstream``).
///
/// The default is ``atConnect``: a device's first connection to a host then costs what it would
/// on an iPhone, and a refusal reaches the app as its own TLS would report it (an app behind no
/// proxy never sees a `403`). ``atVerdict`` is for people and scripts who read the CONNECT's answer.
package enum TunnelStart: String, Sendable, CaseIterable {
    /// After the verdict: one that blocks is a `403` carrying Apple's error and the violations,
    /// for every connection. A host's first connection costs one round trip more than a direct one
    /// (the device's handshake begins only after the probe's has ended).
    case atVerdict = "verdict"
    /// As soon as the tunnel's connection to the server is open: the device's ClientHello goes to
    /// the server while the probe runs, and the server's answer is held until the verdict, so a
    /// first connection costs no round trip more than a direct one, as on a device. On a host's
    /// first connection a verdict that blocks fails the device's handshake (a fatal
    /// `handshake_failure` alert, which is what the app's own TLS would report), and the log line
    /// says why; later connections get the `403` from the cached verdict.
    case atConnect = "connect"
}
