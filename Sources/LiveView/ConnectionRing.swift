import TrafficReport

/// The most recent connections, at most ``capacity``: adding one beyond it forgets the oldest.
/// Request lines join the open connection with their `connection_id`; a connection line completes
/// it, or starts a connection of its own when none is open under its number.
struct ConnectionRing: Sendable {
    let capacity: Int
    let requestsPerConnection: Int
    /// Slot `sequence % capacity` holds the connection added as number `sequence`.
    private var slots: [RecentConnection] = []
    /// How many connections were ever added: the next one's sequence number.
    private(set) var added = 0
    /// Open connections (request lines in, connection line not yet) by `connection_id`: their sequence.
    private var open: [Int64: Int] = [:]

    init(capacity: Int, requestsPerConnection: Int) {
        self.capacity = max(1, capacity)
        self.requestsPerConnection = max(0, requestsPerConnection)
    }

    /// Connections forgotten to keep within ``capacity``.
    var evicted: Int { max(0, added - capacity) }

    /// Connections whose request lines came and whose connection line has not (yet).
    var openCount: Int { open.count }

    /// The connections kept, newest first.
    var newestFirst: [RecentConnection] {
        let first = max(0, added - capacity)
        return (first..<added).reversed().map { slots[$0 % capacity] }
    }

    /// Adds a request line to its open connection, opening one when there is none.
    mutating func add(_ request: LoggedRequest) {
        var request = request
        // Headers are never shown, and with --log-headers they are most of the line.
        request.requestHeaders = nil
        request.responseHeaders = nil
        if let sequence = open[request.connectionID] {
            Self.append(request, to: &slots[sequence % capacity], limit: requestsPerConnection)
        } else {
            var connection = RecentConnection(connectionID: request.connectionID)
            Self.append(request, to: &connection, limit: requestsPerConnection)
            open[request.connectionID] = push(connection)
        }
    }

    /// Adds a connection line: it completes the open connection with its `connection_id`.
    /// - Returns: the connection as kept, with the requests that came before it.
    @discardableResult
    mutating func add(_ record: LoggedConnection, details: ConnectionDetails, connectionID: Int64?) -> RecentConnection
    {
        if let connectionID, let sequence = open.removeValue(forKey: connectionID) {
            slots[sequence % capacity].record = record
            slots[sequence % capacity].details = details
            return slots[sequence % capacity]
        }
        let connection = RecentConnection(connectionID: connectionID, record: record, details: details)
        push(connection)
        return connection
    }

    /// Static, so that `&slots[i]` is the only access to `self` while it runs: a method on `self`
    /// would copy `self` first, and with it share `slots`, which the inout access then copied whole
    /// (a thousand connections) for every request line.
    private static func append(_ request: LoggedRequest, to connection: inout RecentConnection, limit: Int) {
        if connection.requests.count < limit {
            connection.requests.append(request)
        } else {
            connection.droppedRequests += 1
        }
    }

    /// Stores `connection` as the newest, forgetting the oldest when full; returns its sequence.
    @discardableResult
    private mutating func push(_ connection: RecentConnection) -> Int {
        let sequence = added
        if slots.count < capacity {
            slots.append(connection)
        } else {
            let oldest = slots[sequence % capacity]
            if let id = oldest.connectionID, open[id] == sequence - capacity { open.removeValue(forKey: id) }
            slots[sequence % capacity] = connection
        }
        added += 1
        return sequence
    }
}
