import TrafficReport

/// What the live view knows of a host beyond the report's tally: when it was last seen (by a
/// connection or a request line) and which devices used it, at most a few of them.
package struct HostActivity: Sendable, Equatable {
    /// The latest `ts` of its lines (RFC 3339 UTC, which sorts as text).
    package private(set) var lastSeen: String?
    /// Device addresses (no port) in first-seen order, at most the live view's limit.
    package private(set) var clients: [String] = []
    /// Whether more devices than ``clients`` used it.
    package private(set) var moreClients = false

    init() {}

    mutating func note(timestamp: String?, client: String?, clientLimit: Int) {
        if let timestamp, lastSeen.map({ timestamp > $0 }) ?? true { lastSeen = timestamp }
        guard let client = client.map(Self.address), !client.isEmpty, !clients.contains(client) else { return }
        if clients.count < clientLimit {
            clients.append(client)
        } else {
            moreClients = true
        }
    }

    /// The device of a logged `client` (address and port): as `report --client` matches it.
    static func address(_ client: String) -> String { TrafficSelection.deviceAddress(client) }
}
