/// The fields of a connection line (kind `connection`, and the live view's `connection_open`), in
/// the order they are written: docs/log-format.md is the contract. Fields may be added (at the
/// end), never renamed.
package enum ConnectionField: String, LogField {
    case ts, client, method, scheme, host, port
    case sni
    /// `kind` and `key`: which part of the policy decided.
    case rule
    case compliant, action, violations, error, explanations
    /// The verdict for a ClientHello naming another host than the CONNECT (``ServerNameCheckField``).
    case sniCheck = "sni_check"
    case tunnel
    case helloUnreadable = "hello_unreadable"
    /// What the proxy's probe saw (``ProbeTLSField``).
    case tls
    /// What the device itself negotiated (``DeviceHelloField``).
    case observed
    case status, upstream
    case upstreamError = "upstream_error"
    case bytesUp = "bytes_up"
    case bytesDown = "bytes_down"
    case durationMilliseconds = "duration_ms"
    case kind
    case connectionID = "connection_id"
    case inspect, passthrough
    case interceptFailed = "intercept_failed"
    case clientAlert = "client_alert"
    case requests
    case upstreamResumed = "upstream_resumed"
    /// ``Failure``'s code for `upstream_error`; null when that is null. Lines written before it
    /// existed have no such field.
    case failure
    /// Where the time before the first relayed byte went (``TimingField``); null for a line with
    /// no verdict, connect or tunnel to time. Lines written before it existed have no such field.
    case timing
    /// The app the device's User-Agent names (``AppAgent``): the CONNECT's, or else the first
    /// intercepted request's, or a plain request's; null when none was sent. Lines written before it
    /// existed have no such field.
    case app
    /// How the connection reached the proxy (``CapturePath``). Lines written before it existed have
    /// no such field: they came through the proxy setting.
    case capture
    /// A captured connection's destination as the device dialled it (`address:port`), which the
    /// proxy connected to; null for the proxy setting's connections.
    case originalDestination = "original_destination"
    /// A captured TLS connection whose server name does not resolve to the address the device
    /// dialled: what the name resolved to instead (flagged, not blocked); null otherwise.
    case serverNameMismatch = "server_name_mismatch"
    /// The WireGuard peer (`atsproxyctl wireguard add-device NAME`) whose tunnel address the client
    /// is; null for every other client. Lines written before it existed have no such field.
    case device
    /// A captured connection's destination address as the device's own DNS query named it (the
    /// WireGuard tunnel's DNS, which the proxy answers); null when it did not ask the proxy.
    case dnsName = "dns_name"
}

/// The members of a connection line's `timing` object: milliseconds from the request head, each
/// null when that step did not happen.
package enum TimingField: String, LogField {
    /// When the verdict was known (a cached one at once; else the probe's time, or the proxy's own
    /// upstream handshake in intercept mode).
    case verdictMilliseconds = "verdict_ms"
    /// How long the connection upstream took to open (the tunnel's, or the origin's for http://).
    case connectMilliseconds = "connect_ms"
    /// When the `200 Connection established` went to the device.
    case establishedMilliseconds = "established_ms"
}

/// The members of a connection line's `sni_check` object.
package enum ServerNameCheckField: String, LogField {
    case host, rule, compliant, violations
}

/// The members of a connection line's `tls` object: the probe's handshake.
package enum ProbeTLSField: String, LogField {
    case version, cipher, trust, certificates
    /// The key-exchange group (``KeyExchangeGroupField``); null when none was used or the line predates it.
    case group
    /// Present only when the probe fetched a missing intermediate (``IntermediateFetchField``).
    case intermediateFetches = "intermediate_fetches"
}

/// The members of a key-exchange group (`tls.group`, a request line's `tls_group`), written by the
/// policy's own JSON.
package enum KeyExchangeGroupField: String, LogField {
    case name, codepoint
}

/// The members of each of `tls.intermediate_fetches`: an intermediate the server left out, fetched
/// from a CA Issuers URL as iOS fetches it.
package enum IntermediateFetchField: String, LogField {
    case url, result, certificates, reason, cached
}

/// The members of a connection line's `observed` object: the device's own handshake.
package enum DeviceHelloField: String, LogField {
    case version, cipher
}

/// The members of a line's `rule` object (written by the policy's own JSON): which part of the
/// policy decided.
package enum RuleField: String, LogField {
    case kind, key
}

/// The members of a line's `error` object (written by the policy's own JSON): the error an app
/// would have seen.
package enum AppleErrorField: String, LogField {
    case nsurl, ssl
}
