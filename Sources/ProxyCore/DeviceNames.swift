import ATSPolicy
import POSIX

/// The names of the devices that reach the proxy through WireGuard (`--wireguard-listen`), by
/// their tunnel addresses: each peer has one address of its own, which WireGuard lets only that
/// peer's key send from, so the address names the device on its lines (`device`).
///
/// The daemon replaces the table when a device is added or removed (a reload); the loops read it
/// once per accepted connection, under a lock they share.
package final class DeviceNames: Sendable {
    private let names: Locked<[IPAddress: String]>

    package init(_ names: [IPAddress: String] = [:]) {
        self.names = Locked(names)
    }

    /// The device at `address` (an IPv4 client of an IPv6 listener as its IPv4 address); nil for
    /// every address no peer has.
    package func name(of address: IPAddress?) -> String? {
        guard let address = address?.unmapped else { return nil }
        return names.withLock { $0[address] }
    }

    /// Replaces every name: connections accepted from now on are named by `names`.
    package func replace(with names: [IPAddress: String]) {
        self.names.withLock { $0 = names }
    }

    package var count: Int { names.withLock { $0.count } }

    /// Every device, by name.
    package var all: [(name: String, address: IPAddress)] {
        names.withLock { $0.map { (name: $0.value, address: $0.key) } }.sorted { $0.name < $1.name }
    }
}
