/// Where a request sent to the proxy wants to go.
///
/// A forward proxy only accepts the two forms that name the origin (RFC 9112 §3.2.2, §3.2.3):
/// `CONNECT host:port` for tunnels and an absolute `http://` or `https://` URL for everything
/// else. Origin-form and asterisk-form are meant for origin servers and are refused.
package enum RequestTarget: Sendable, Hashable, CustomStringConvertible {
    /// authority-form, CONNECT only. `host` is lowercased, IPv6 without brackets.
    case authority(host: String, port: UInt16)
    /// absolute-form. `scheme` is "http" or "https", lowercased; `port` is the explicit port or
    /// nil; `pathAndQuery` starts with "/" (just "/" when the URL has no path).
    case absolute(scheme: String, host: String, port: UInt16?, pathAndQuery: String)

    /// The host to connect to.
    package var host: String {
        switch self {
        case .authority(let host, _), .absolute(_, let host, _, _): host
        }
    }

    /// The port to connect to: the explicit one, or the scheme's default (80 or 443).
    package var effectivePort: UInt16 {
        switch self {
        case .authority(_, let port): port
        case .absolute(let scheme, _, let port, _): port ?? (scheme == "https" ? 443 : 80)
        }
    }

    /// The target as it is written in a request line.
    package var description: String {
        switch self {
        case .authority(let host, let port):
            HTTPAuthority.written(host: host, port: port)
        case .absolute(let scheme, let host, let port, let pathAndQuery):
            "\(scheme)://\(HTTPAuthority.written(host: host, port: port))\(pathAndQuery)"
        }
    }

    /// The authority written for a Host field: host, plus the port when the URL had one.
    var hostFieldValue: String {
        switch self {
        case .authority(let host, let port): HTTPAuthority.written(host: host, port: port)
        case .absolute(_, let host, let port, _): HTTPAuthority.written(host: host, port: port)
        }
    }

    /// What goes in the request line when forwarding to the origin: the path and query for
    /// absolute-form (origin-form, RFC 9112 §3.2.1), host:port for CONNECT.
    var forwardedForm: String {
        switch self {
        case .authority: description
        case .absolute(_, _, _, let pathAndQuery): pathAndQuery
        }
    }
}
