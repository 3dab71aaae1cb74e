import ATSPolicy
import LogRecord
import TextFormats
import TrafficReport

/// One connection of the recent ones: its connection line once the connection has ended, and the
/// request (and `tls_stream`) lines logged inside it, joined by `connection_id`. The request lines
/// come first: the daemon logs a connection when it ends.
package struct RecentConnection: Sendable {
    /// `connection_id`: nil on lines written before intercept mode, which join nothing.
    package var connectionID: Int64?
    /// The connection line; nil while the connection is still open (only its request lines are in).
    package var record: LoggedConnection?
    /// What the live view shows of the connection line besides ``record``.
    package var details: ConnectionDetails?
    /// The request lines kept, in the order they came (at most the live view's per-connection limit),
    /// without their headers: the view never shows them, and they are the bulk of a line.
    package var requests: [LoggedRequest] = []
    /// Request lines beyond the limit, counted only.
    package var droppedRequests = 0

    /// Whether the connection line is in: the connection has ended.
    package var isComplete: Bool { record != nil }

    /// When the connection started, or its first request's time while it is open.
    package var timestamp: String? { record?.timestamp ?? requests.first?.timestamp }

    /// The device's address, from whichever line says.
    package var client: String? { details?.client ?? requests.first?.client }

    /// Whether the connection concerns `host`: as its request host, its ClientHello's other name,
    /// or (while it is open) the host of its requests.
    package func concerns(_ host: HostIdentity) -> Bool {
        if let record {
            if Self.same(record.host, host) { return true }
            if let check = record.serverNameCheck, Self.same(check.host, host) { return true }
            return false
        }
        return requests.contains { Self.same($0.host, host) }
    }

    private static func same(_ name: String, _ host: HostIdentity) -> Bool {
        (try? HostIdentity(parsing: name)) == host
    }
}

/// The fields of a connection line the live view shows that the report does not read.
package struct ConnectionDetails: Sendable, Equatable {
    /// `client`, `address:port` as logged.
    package var client: String?
    /// `status`: the origin's status for a forwarded http:// request.
    package var status: Int?
    package var bytesUp: Int64?
    package var bytesDown: Int64?
    package var durationMilliseconds: Int64?
    /// `inspect`: `intercept` or `passthrough` in intercept mode, nil in tunnel mode.
    package var inspect: String?
    /// `error.nsurl` and `error.ssl`: the error an app would have seen.
    package var appleError: String?

    package init(json: JSONValue) {
        typealias Field = ConnectionField
        client = json[Field.client]?.stringValue
        status = json[Field.status]?.intValue.map(Int.init)
        bytesUp = json[Field.bytesUp]?.intValue
        bytesDown = json[Field.bytesDown]?.intValue
        durationMilliseconds = json[Field.durationMilliseconds]?.intValue
        inspect = json[Field.inspect]?.stringValue
        if let nsurl = json[Field.error]?[AppleErrorField.nsurl]?.intValue {
            appleError = json[Field.error]?[AppleErrorField.ssl]?.intValue.map { "\(nsurl) (\($0))" } ?? "\(nsurl)"
        }
    }
}
