/// The one authority an intercepted connection's requests may name: its origin's. The origin was
/// judged for that name alone (the proxy's own handshake sent it and checked the certificate for
/// it), so a request naming another over the same connection is what domain fronting does, and
/// the log must not say it went where it did not.
extension RequestOrigin {
    /// The port a request's authority stands for when it names none: the connection's scheme's
    /// default (443 for https), whatever scheme an absolute-form target claims, because the request
    /// goes over this connection either way.
    private var defaultPort: UInt16 { scheme == "https" ? 443 : 80 }

    /// The origin's authority as written in a URL: host (IPv6 in brackets), and `:port` unless it
    /// is the scheme's default.
    package var authority: String {
        HTTPAuthority.written(host: host, port: port == defaultPort ? nil : port)
    }

    /// The URL a request on this connection is logged with: the origin's scheme and authority,
    /// then the target's path and query. Never the authority the request named: a request is only
    /// forwarded when that is the origin's (``foreignAuthority(in:)``), and one refused for naming
    /// another went nowhere else either.
    package func url(of target: RequestTarget) -> String {
        switch target {
        case .absolute(_, _, _, let pathAndQuery): "\(scheme)://\(authority)\(pathAndQuery)"
        case .authority: "\(scheme)://\(authority)"
        }
    }

    /// Nil when every authority `head` names (its target, made from the Host field for
    /// origin-form; the Host field beside an absolute-form target) is the origin's: the same host,
    /// compared without case (targets and Host values come lowercased, IPv6 without brackets), and
    /// the same port when one is named. Else the sentence saying which.
    package func foreignAuthority(in head: RequestHead) -> String? {
        let named: (host: String, port: UInt16?)
        switch head.target {
        case .absolute(_, let host, let port, _): named = (host, port)
        case .authority(let host, let port): named = (host, port)
        }
        let what = head.arrivedInOriginForm ? "the Host header" : "the request target"
        if let problem = mismatch(named.host, named.port, what: what) { return problem }
        guard !head.arrivedInOriginForm, let value = head.headers.values(for: "Host").first, !value.isEmpty,
            case .success(let field) = HTTPAuthority.parse(Array(value.utf8)[...], portRequired: false)
        else { return nil }
        return mismatch(field.host, field.port, what: "the Host header")
    }

    /// The ways a request may name this origin exactly, with its port and without, that
    /// ``foreignAuthority(named:)`` accepts (a server name whose last label is numeric, `127.1`, is
    /// an SNI but no authority): for a caller that checks many requests, to compare bytes before it
    /// parses, and take the same decisions.
    package var exactAuthorities: [String] {
        [HTTPAuthority.written(host: host, port: port), HTTPAuthority.written(host: host, port: nil)]
            .filter { foreignAuthority(named: $0) == nil }
    }

    /// As ``foreignAuthority(in:)``, for an HTTP/2 request's `:authority` (RFC 9113 §8.3.1): nil when it
    /// names the origin, else the sentence saying which (or that it is no authority at all).
    package func foreignAuthority(named value: String) -> String? {
        guard case .success(let field) = HTTPAuthority.parse(Array(value.utf8)[...], portRequired: false) else {
            return ":authority \"\(value)\" is not a host with an optional port"
        }
        return mismatch(field.host, field.port, what: ":authority")
    }

    /// A named port must be the connection's. A name without one is taken as the connection's own
    /// port, not the scheme's default: the request can only go to the port the device connected to,
    /// the log names that port, and clients that leave a non-default port out of Host (hand-written
    /// scripts, some libraries) are not refused for it. The name is what domain fronting changes.
    private func mismatch(_ otherHost: String, _ otherPort: UInt16?, what: String) -> String? {
        guard otherHost != host || (otherPort.map { $0 != port } ?? false) else { return nil }
        let named = HTTPAuthority.written(host: otherHost, port: otherPort)
        return
            "\(what) names \(named), but this connection is to \(authority), the only server it was judged for: "
            + "a request for another server must go on a connection of its own"
    }
}
