import ATSPolicy
import EventLoop

/// Where one client may be connected: the vet every upstream address passes before the proxy
/// sends it a byte (``UpstreamDialer``, and a cached verdict's address before a tunnel uses it).
///
/// - A client that is not on loopback may not reach a local address (``LocalAddressKind``:
///   loopback, link-local, unspecified, multicast) unless `--allow-destination` opens its range:
///   otherwise a client allowed from the LAN reaches services that listen only on the proxy
///   host's loopback. A loopback client may (it is on the host already, and CI jobs test servers
///   on 127.0.0.1).
/// - Nobody may reach the proxy's own listener (a loop), whatever `--allow-destination` says.
///
/// Addresses are judged as resolved, never by name, and IPv4-mapped IPv6 addresses as the IPv4
/// address they carry, for the client and the destination alike.
package struct DestinationRules: Sendable {
    /// Whether the client is on the proxy's host (127.0.0.0/8 or ::1, mapped or not).
    package var clientIsLoopback: Bool
    /// `--allow-destination`: ranges every client may reach.
    package var allowedDestinations: [AddressRange]
    /// The proxy's listeners, as bound.
    package var listeners: [SocketAddress]
    /// Whether an address is assigned to one of this host's interfaces; asked only when the
    /// destination's port is a wildcard listener's (``HostInterfaces`` reads them fresh).
    package var isHostAddress: @Sendable (IPAddress) -> Bool

    package init(
        client: IPAddress?, allowedDestinations: [AddressRange], listeners: [SocketAddress],
        isHostAddress: @escaping @Sendable (IPAddress) -> Bool = { HostInterfaces.addresses().contains($0) }
    ) {
        clientIsLoopback = client.map { LocalAddressKind($0) == .loopback } ?? false
        self.allowedDestinations = allowedDestinations
        self.listeners = listeners
        self.isHostAddress = isHostAddress
    }

    /// What decides where this client may be connected, as text: clients with the same scope may share
    /// what a fetch under these rules found (``IntermediateFetchCache``).
    package var fetchScope: String {
        (clientIsLoopback ? "loopback" : "remote") + "[" + allowedDestinations.map(\.description).joined(separator: ",")
            + "]"
    }

    /// Why the proxy must not connect this client to `address`, or nil when it may.
    package func vet(_ address: SocketAddress) -> DestinationRefusal? {
        guard let ip = address.withAddressBytes({ IPAddress(networkBytes: $0) }) else { return nil }
        return vet(ip, port: address.port)
    }

    package func vet(_ address: IPAddress, port: UInt16) -> DestinationRefusal? {
        let address = address.unmapped
        let endpoint = DestinationRefusal.Endpoint(address: address, port: port)
        if let listener = listener(reachedBy: address, port: port) {
            return .proxyItself(endpoint, listener: listener)
        }
        guard !clientIsLoopback, let kind = LocalAddressKind(address) else { return nil }
        if allowedDestinations.contains(where: { $0.contains(address) }) { return nil }
        return .local(kind, endpoint)
    }

    /// The listener a connection to `address`:`port` would reach: the same address and port; or
    /// the port of a wildcard listener (0.0.0.0, ::) at any address of this host; or the port of
    /// any listener at an unspecified address, which the kernel sends to the host itself. Families
    /// are not told apart (a `::` listener usually takes IPv4 too): refusing a request for another
    /// service on the proxy's own port is the safe mistake.
    private func listener(reachedBy address: IPAddress, port: UInt16) -> DestinationRefusal.Endpoint? {
        let kind = LocalAddressKind(address)
        for listener in listeners where listener.port == port {
            guard let bound = listener.withAddressBytes({ IPAddress(networkBytes: $0) })?.unmapped else { continue }
            let endpoint = DestinationRefusal.Endpoint(address: bound, port: port)
            if bound == address || kind == .unspecified { return endpoint }
            if LocalAddressKind(bound) == .unspecified, kind == .loopback || isHostAddress(address) { return endpoint }
        }
        return nil
    }
}
