/// Why a connection line has an `upstream_error`, as a code a reader can match (the line's
/// `failure`; the sentence in `upstream_error` is for people and may change). Mostly on `failed`
/// and `denied` lines; a `blocked` line whose server does not speak TLS, and an `allowed` one
/// whose origin sent bytes beyond its response or cut it off, or that was closed while idle,
/// stalled or at shutdown, carry one too. docs/log-format.md lists them: codes may be added, never renamed.
package enum Failure: String, Sendable, CaseIterable {
    // The device's request.
    /// The request head (or a plain request's body framing) could not be read: 400, 431 or 501.
    case badRequest = "bad_request"
    /// No complete request head within the head timeout: 408.
    case requestTimeout = "request_timeout"
    /// A head that is neither a CONNECT nor an absolute `http://` URL: 400.
    case notAProxyRequest = "not_a_proxy_request"
    /// The request's host is not a host name: 400.
    case invalidHost = "invalid_host"
    /// The tunnel's first bytes (a ClientHello or a request) did not come within the head timeout.
    case helloTimeout = "hello_timeout"
    /// The client closed or failed before a plain request's exchange was over.
    case clientClosed = "client_closed"
    /// A connection to `--transparent-listen` that no firewall rule redirected (a client that
    /// dialled the listener itself, or a rule without `REDIRECT` or `TPROXY`): it has no other
    /// destination to judge, and is closed.
    case notRedirected = "not_redirected"
    /// A connection to `--transparent-listen` that was the proxy's own upstream connect, redirected
    /// back by rules that do not exempt `--upstream-mark`: refused, so it cannot loop; the connect it
    /// was then fails.
    case redirectLoop = "redirect_loop"

    // The proxy's own rules.
    /// No probe was made: the limit on TLS handshakes under way, in all or to this upstream, was
    /// reached (4,096 in all, 64 to one host and port): 503. Nothing was sent upstream.
    case probeLimit = "probe_limit"
    /// The proxy ran out of something of its own (memory for a TLS session, a timer, a socket
    /// option): nothing is known of the upstream.
    case proxyResource = "proxy_resource"
    /// The client is not one the proxy serves (`--allow-client`): 403.
    case clientDenied = "client_denied"
    /// The destination is one this client may not reach (`--allow-destination`, a loop): 403.
    case destinationDenied = "destination_denied"

    // The upstream.
    /// The host name did not resolve.
    case dns
    /// No address of the host accepted the connection.
    case connectFailed = "connect_failed"
    /// The upstream could not be reached, and nothing more precise is known.
    case upstreamUnreachable = "upstream_unreachable"
    /// The upstream did not answer in time: the connect, the probe's handshake, or a response.
    case upstreamTimeout = "upstream_timeout"
    /// The probe's TLS handshake failed (no verdict could be reached).
    case handshake
    /// The connection failed under the probe's handshake (a reset).
    case connectionLost = "connection_lost"
    /// The server does not speak TLS where the device started TLS (or where the policy forbids cleartext).
    case serverNotTLS = "server_not_tls"
    /// The origin's response to a plain request could not be read or relayed: 502.
    case badResponse = "bad_response"
    /// The origin closed or failed the connection during a plain request's exchange.
    case upstreamClosed = "upstream_closed"
    /// The origin sent bytes beyond its response's framed end (a body on a HEAD, 204 or 304
    /// answer, more than its Content-Length): the client had the response as framed, and the
    /// origin's connection was closed with the surplus unread, not kept for another request.
    case responseSurplus = "response_surplus"
    /// The response's head reached the client and its body was cut off: it did not end by its
    /// framing (short of its Content-Length, chunked without its last chunk, a malformed chunk), nor,
    /// for a body that runs until the close, by the origin's clean close (a reset, an error, a TLS
    /// end without close_notify), or the idle or stall timer ended it. The client's connection was
    /// reset, never closed cleanly, so it cannot take the part for the whole.
    case responseTruncated = "response_truncated"

    // Intercept mode.
    /// The proxy's own TLS handshake with the server failed, or could not start.
    case upstreamHandshake = "upstream_handshake"
    /// The device did not complete the handshake with the proxy's minted certificate in time.
    case clientHandshakeTimeout = "client_handshake_timeout"
    /// The device refused the proxy's minted certificate: a certificate alert (unknown_ca,
    /// bad_certificate, certificate_unknown), or a handshake completed then closed before any byte.
    case clientRejectedCertificate = "client_rejected_certificate"
    /// The device offered no TLS version the proxy's device side speaks (1.2 and 1.3).
    case clientTLSVersion = "client_tls_version"
    /// The device offered no cipher suite or group the proxy's device side accepts.
    case clientNoSharedCipher = "client_no_shared_cipher"
    /// The device's handshake failed otherwise: another alert, a malformed message.
    case clientHandshakeFailed = "client_handshake_failed"
    /// The device closed or reset the connection during its handshake, without an alert.
    case clientReset = "client_reset"
    /// No certificate could be minted for the server name (or there is no CA).
    case certificateMint = "certificate_mint"
    /// A peer of an intercepted HTTP/2 connection broke the protocol badly enough to end the
    /// connection (the proxy sent a GOAWAY with the library's code), or closed it with streams open.
    case http2Error = "http2_error"

    // A connection that was open.
    /// Closed: no byte moved either way for the idle timeout.
    case closedIdle = "closed_idle"
    /// Closed: bytes waited for a reader that took none of them for the stall timeout.
    case closedStalled = "closed_stalled"
    /// Closed: a spliced tunnel's socket timed out on one side.
    case closedTimeout = "closed_timeout"
    /// Closed: the proxy was stopping and its drain time ran out.
    case shutdown
}
