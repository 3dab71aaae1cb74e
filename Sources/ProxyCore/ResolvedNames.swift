import ATSPolicy
import POSIX

/// The names the WireGuard devices' own DNS queries resolved, by address: the proxy answers those
/// queries (``ProxySettings/resolvedNames``), so a connection that names no server (no SNI, no
/// `Host`) can still say which name the device looked up before dialling (`dns_name`).
///
/// The latest name per address wins; bounded, the oldest addresses going first.
package final class ResolvedNames: Sendable {
    private struct Table {
        var names: [IPAddress: String] = [:]
        var order: [IPAddress] = []
        var start = 0
    }

    private let table = Locked(Table())
    package let capacity: Int

    package init(capacity: Int = 8192) { self.capacity = capacity }

    package func record(_ name: String, for addresses: [IPAddress]) {
        table.withLock { table in
            for address in addresses {
                if table.names.updateValue(name, forKey: address) == nil { table.order.append(address) }
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

    package func name(of address: IPAddress?) -> String? {
        guard let address = address?.unmapped else { return nil }
        return table.withLock { $0.names[address] }
    }
}
