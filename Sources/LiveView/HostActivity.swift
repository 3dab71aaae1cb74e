import TrafficReport

/// What the live view knows of a host beyond the report's tally: when it was last seen (by a
/// connection or a request line), and which devices and apps used it, at most a few of each.
package struct HostActivity: Sendable, Equatable {
    /// The latest `ts` of its lines (RFC 3339 UTC, which sorts as text).
    package private(set) var lastSeen: String?
    /// Device addresses (no port) in first-seen order, at most the live view's limit.
    package private(set) var clients: [String] = []
    /// Whether more devices than ``clients`` used it.
    package private(set) var moreClients = false
    /// The apps its lines named (``AppKey/noUserAgent`` for lines that named none), in first-seen
    /// order, at most the live view's limit.
    package private(set) var apps: [AppKey] = []
    /// Whether more apps than ``apps`` used it.
    package private(set) var moreApps = false

    init() {}

    /// A line about the host: its time, its `client` (address and port) and the app it named.
    mutating func note(timestamp: String?, client: String?, app: AppKey, limits: LiveTraffic.Limits) {
        if let timestamp, lastSeen.map({ timestamp > $0 }) ?? true { lastSeen = timestamp }
        if !apps.contains(app) {
            if apps.count < limits.appsPerHost { apps.append(app) } else { moreApps = true }
        }
        guard let client = client.map(Self.address), !client.isEmpty, !clients.contains(client) else { return }
        if clients.count < limits.clientsPerHost {
            clients.append(client)
        } else {
            moreClients = true
        }
    }

    /// The device of a logged `client` (address and port): as `report --client` matches it. A
    /// WireGuard device is noted by its name instead (the line's `device`), which has no port.
    static func address(_ client: String) -> String { TrafficSelection.deviceAddress(client) }
}
