import ATSPolicy
import POSIX

/// The names the WireGuard devices' own DNS queries resolved, by address: the proxy answers those
/// queries (``ProxySettings/resolvedNames``), so a connection that names no server (no SNI, no
/// `Host`) can still say which name the device looked up before dialling (`dns_name`).
///
/// Per device: one device's lookup never names another's connection. The latest name per device
/// and address wins; bounded, the oldest entries going first.
package final class ResolvedNames: Sendable {
    private struct Key: Hashable {
        var device: IPAddress
        var address: IPAddress
    }

    private struct Table {
        var names: [Key: String] = [:]
        var order: [Key] = []
        var start = 0
    }

    private let table = Locked(Table())
    package let capacity: Int

    package init(capacity: Int = 8192) { self.capacity = capacity }

    /// `device` (its tunnel address) looked `name` up and was answered `addresses`.
    package func record(_ name: String, for addresses: [IPAddress], device: IPAddress) {
        table.withLock { table in
            for address in addresses {
                let key = Key(device: device.unmapped, address: address.unmapped)
                if table.names.updateValue(name, forKey: key) == nil { table.order.append(key) }
            }
            while table.names.count > capacity, table.start < table.order.count {
                table.names[table.order[table.start]] = nil
                table.start += 1
            }
            // Compacted now and then, so the order does not grow with the addresses already dropped.
            if table.start > capacity {
                table.order.removeFirst(table.start)
                table.start = 0
            }
        }
    }

    /// The name `device`'s own lookup gave for `address`; nil when it asked none that did.
    package func name(of address: IPAddress?, device: IPAddress?) -> String? {
        guard let address = address?.unmapped, let device = device?.unmapped else { return nil }
        return table.withLock { $0.names[Key(device: device, address: address)] }
    }
}
