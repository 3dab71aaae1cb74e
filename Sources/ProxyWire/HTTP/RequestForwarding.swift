extension RequestHead {
    /// The head to send to the origin (or, for CONNECT, to an upstream proxy).
    ///
    /// - The request line is `METHOD origin-form HTTP/1.1` (RFC 9112 §3.2.1): the proxy speaks
    ///   HTTP/1.1 to the origin whatever the client spoke (RFC 9110 §2.5). A CONNECT keeps its
    ///   host:port target.
    /// - Hop-by-hop fields go: Connection and every field it names, Proxy-Connection, Keep-Alive,
    ///   Proxy-Authorization, Proxy-Authenticate, TE, Trailer and Upgrade. Transfer-Encoding stays.
    /// - Host is added first when missing, and kept when it names the target. A Host naming some
    ///   other authority is replaced by the target's: RFC 9112 §3.2.2 says "A proxy that forwards
    ///   such a request MUST generate a new Host field value based on the received
    ///   request-target", and the host the policy judged must be the one the origin serves.
    /// - `Via: 1.1 <via>` is appended, or added to the last Via line (RFC 9110 §7.6.3).
    ///
    /// Call ``bodyFraming()`` first: a request it refuses must not be forwarded.
    package func headForOrigin(via: String) -> [UInt8] {
        var fields = ForwardedFields.prepare(headers, receivedVersion: version, via: via)
        if !hostFieldNamesTarget(fields) {
            fields.removeAll("Host")
            fields.insert(HTTPField(name: "Host", value: target.hostFieldValue), at: 0)
        }
        return HeadSerializer.serialize(startLine: "\(method) \(target.forwardedForm) HTTP/1.1", headers: fields)
    }

    /// Whether there is exactly one Host line and it names the target's host and port, the
    /// scheme's default port standing in for a missing one.
    private func hostFieldNamesTarget(_ fields: HTTPHeaders) -> Bool {
        let hosts = fields.values(for: "Host")
        guard hosts.count == 1, let value = hosts.first,
            case .success(let authority) = HTTPAuthority.parse(Array(value.utf8)[...], portRequired: false),
            authority.host == target.host
        else { return false }
        switch target {
        case .authority(_, let port):
            return authority.port == port
        case .absolute:
            return (authority.port ?? defaultPort) == target.effectivePort
        }
    }

    private var defaultPort: UInt16 {
        if case .absolute(let scheme, _, _, _) = target, scheme == "https" { return 443 }
        return 80
    }
}
