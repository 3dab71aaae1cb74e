/// Why a probe could not complete, in words a user can act on.
package enum ProbeFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The name did not resolve.
    case resolve(host: String, reason: String)
    /// No address accepted the connection.
    case connect(host: String, port: UInt16, reason: String)
    /// The TLS handshake failed; the reason in OpenSSL's words, with the alert when one came.
    case handshake(reason: String)
    /// A stage took longer than the probe's time limit.
    case timeout(stage: String)
    /// The server answered the ClientHello with bytes that are not TLS records (an HTTP response,
    /// an SMTP banner): it speaks cleartext on this port.
    case notTLS(reason: String)
    /// The handshake was not complete by its deadline; the reason says how far it got
    /// ("upstream sent no TLS handshake in 10 s").
    case deadline(reason: String)
    /// The connection failed under the handshake (a reset): no verdict, and no retry as another client.
    case connectionLost(reason: String)
    /// No probe was made: the proxy's limit on TLS handshakes under way (in all, or to this
    /// upstream) was reached. Nothing was sent upstream, and nothing is known of the server.
    case probeLimit(reason: String)
    /// No probe could be made for want of something local: memory for a TLS session, a socket
    /// option. Nothing is known of the server.
    case localResource(reason: String)

    /// Whether time ran out (a gateway timeout, 504), rather than something failing (502).
    package var isTimeout: Bool {
        switch self {
        case .timeout, .deadline: true
        default: false
        }
    }

    package var description: String {
        switch self {
        case .resolve(let host, let reason): "cannot resolve \(host): \(reason)"
        case .connect(let host, let port, let reason): "cannot connect to \(host) port \(port): \(reason)"
        case .handshake(let reason): "TLS handshake failed: \(reason)"
        case .timeout(let stage): "timed out during \(stage)"
        case .notTLS(let reason): "the server does not speak TLS: \(reason)"
        case .deadline(let reason): reason
        case .connectionLost(let reason): "the connection failed during the TLS handshake: \(reason)"
        case .probeLimit(let reason), .localResource(let reason): "not probed: \(reason)"
        }
    }
}
