import ATSPolicy

/// Why the proxy will not connect a client to an address: the address is on the proxy's host or
/// its link (and the client is not on loopback), or it is the proxy's own listener.
package enum DestinationRefusal: Sendable, Equatable, CustomStringConvertible {
    /// A local address (``LocalAddressKind``) a client that is not on loopback may not reach
    /// unless `--allow-destination` opens it.
    case local(LocalAddressKind, Endpoint)
    /// The proxy's own listening address and port: the request would come back to the proxy, and
    /// a CONNECT would nest without end. Refused for every client; no setting opens it.
    case proxyItself(Endpoint, listener: Endpoint)

    /// An address and port, written as the log's `upstream` field writes them.
    package struct Endpoint: Sendable, Equatable, CustomStringConvertible {
        package var address: IPAddress
        package var port: UInt16

        package init(address: IPAddress, port: UInt16) {
            self.address = address
            self.port = port
        }

        package var description: String {
            address.isIPv4 ? "\(address):\(port)" : "[\(address)]:\(port)"
        }
    }

    /// Whether the destination is the proxy's own listener (a transparent listener's connection
    /// that nothing redirected).
    package var isProxyItself: Bool { if case .proxyItself = self { true } else { false } }

    /// The refused address and port (the log's `upstream`).
    package var destination: Endpoint {
        switch self {
        case .local(_, let endpoint), .proxyItself(let endpoint, _): endpoint
        }
    }

    /// What is wrong with the destination, in words.
    package var description: String {
        switch self {
        case .local(let kind, let endpoint):
            "\(endpoint), \(kind.phrase); see --allow-destination"
        case .proxyItself(let endpoint, let listener):
            "\(endpoint), the proxy's own listener \(listener): the request would come back to the proxy"
        }
    }

    /// The sentence the 403 and the log give: who was refused, where to, and why.
    package func sentence(client: String) -> String {
        "atsproxy does not connect clients from \(client) to \(description)"
    }
}

/// The kinds of address that reach the proxy's host or its link rather than the Internet.
package enum LocalAddressKind: String, Sendable, CaseIterable {
    /// 127.0.0.0/8, ::1: services that listen only on the proxy host's loopback.
    case loopback
    /// 169.254.0.0/16, fe80::/10: the link (cloud metadata services live at 169.254.169.254).
    case linkLocal = "link-local"
    /// 0.0.0.0/8, ::: connecting to them reaches the proxy's host itself.
    case unspecified
    /// 224.0.0.0/4, ff00::/8: not a single server.
    case multicast

    var phrase: String {
        switch self {
        case .loopback: "a loopback address of the proxy's host"
        case .linkLocal: "a link-local address"
        case .unspecified: "an unspecified address, which reaches the proxy's host"
        case .multicast: "a multicast address"
        }
    }

    private static let ranges: [(kind: LocalAddressKind, range: AddressRange)] = {
        let table: [(LocalAddressKind, String)] = [
            (.loopback, "127.0.0.0/8"), (.loopback, "::1/128"),
            (.linkLocal, "169.254.0.0/16"), (.linkLocal, "fe80::/10"),
            (.unspecified, "0.0.0.0/8"), (.unspecified, "::/128"),
            (.multicast, "224.0.0.0/4"), (.multicast, "ff00::/8"),
        ]
        return table.map { (kind: $0.0, range: try! AddressRange(parsing: $0.1)) }
    }()

    /// The kind of `address` (IPv4-mapped IPv6 addresses judged as the IPv4 address they carry),
    /// or nil for any other address.
    package init?(_ address: IPAddress) {
        let address = address.unmapped
        guard let kind = Self.ranges.first(where: { $0.range.contains(address) })?.kind else { return nil }
        self = kind
    }
}
