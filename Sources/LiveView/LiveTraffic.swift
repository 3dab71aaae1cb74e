import ATSPolicy
import LogRecord
import TextFormats
import TrafficReport

/// What the live view has gathered from the daemon's log lines, in bounded memory: the report's
/// per-host tally (at most ``Limits/hosts`` hosts), the same tally per app and device (``slices``)
/// for the plist of a filter, each host's last-seen time, devices and apps, each app's counts, and
/// the most recent connections with their request lines.
///
/// A value owned by one thread, the web listener's loop: the daemon hands it each line it writes.
package struct LiveTraffic: Sendable {
    /// How much is kept. Everything beyond is counted, never stored.
    package struct Limits: Sendable, Equatable {
        /// Connections kept with their request lines, newest first.
        package var recentConnections: Int
        /// Hosts tallied: lines about further hosts are counted as dropped.
        package var hosts: Int
        /// Device addresses kept per host.
        package var clientsPerHost: Int
        /// Request lines kept per recent connection.
        package var requestsPerConnection: Int

        /// Connections judged and still open (``openConnectionRecords``): past it, the oldest is forgotten.
        package var openConnections: Int = 5_000
        /// Apps kept per host (``HostActivity/apps``).
        package var appsPerHost: Int = 8
        /// Apps counted (``LiveTraffic/apps``): lines naming further apps are counted in
        /// ``LiveTraffic/unlistedAppLines``.
        package var apps: Int = 256
        /// (app, device) pairs tallied apart (``TrafficSlices``), and hosts tallied in each.
        package var slices: Int = 128
        package var hostsPerSlice: Int = 500

        package init(
            recentConnections: Int = 1_000, hosts: Int = 5_000, clientsPerHost: Int = 16,
            requestsPerConnection: Int = 50
        ) {
            self.recentConnections = recentConnections
            self.hosts = hosts
            self.clientsPerHost = clientsPerHost
            self.requestsPerConnection = requestsPerConnection
        }
    }

    package let limits: Limits
    /// Increases whenever a line is ingested: what was shown under another version is stale.
    package private(set) var version: UInt64 = 0
    /// The report's per-host tally of every line (within ``Limits/hosts``).
    package private(set) var tally: HostTrafficTally
    /// Last seen, devices and apps, for each host of ``tally``.
    package private(set) var activity: [HostIdentity: HostActivity] = [:]
    /// The tally again per app and device: what a filtered plist is made from.
    package private(set) var slices: TrafficSlices
    /// Each app's loads, for at most ``Limits/apps`` apps.
    package private(set) var apps: [AppKey: AppActivity] = [:]
    /// Lines naming apps beyond ``Limits/apps``: counted for their hosts, not for an app.
    package private(set) var unlistedAppLines = 0
    /// Connection lines by how they reached the proxy (``CapturePath``).
    package private(set) var captureCounts: [CapturePath: Int] = [:]
    private var ring: ConnectionRing
    /// Tunnels judged and still relaying (their `connection_open` line is in, their connection line
    /// not yet), by connection id, with the order they opened in: shown in the hosts table, never in
    /// the report's tally, so the plist panel stays what `report` makes of the log.
    package private(set) var openConnectionRecords: [Int64: LoggedConnection] = [:]
    private var openOrder: [Int64] = []
    /// Open connections forgotten to stay within ``Limits/openConnections``.
    package private(set) var forgottenOpenConnections = 0
    /// Lines ingested (empty lines aside).
    package private(set) var lines = 0
    /// Lines that were not JSON, or not a connection, request or tls_stream record.
    package private(set) var unparsedLines = 0
    /// Why the latest of them was refused.
    package private(set) var lastUnparsedReason: String?

    package init(limits: Limits = Limits()) {
        self.limits = limits
        tally = HostTrafficTally(maximumHosts: limits.hosts)
        slices = TrafficSlices(maximumSlices: limits.slices, maximumHostsPerSlice: limits.hostsPerSlice)
        ring = ConnectionRing(capacity: limits.recentConnections, requestsPerConnection: limits.requestsPerConnection)
    }

    /// The recent connections, newest first (open ones, with only request lines, included).
    package var recentConnections: [RecentConnection] { ring.newestFirst }
    /// Connections forgotten to stay within ``Limits/recentConnections``.
    package var evictedConnections: Int { ring.evicted }
    /// Connections with request lines in and no connection line yet (still open, or their line lost).
    package var openConnections: Int { ring.openCount }

    /// Takes one of the daemon's log lines as written (a trailing newline is allowed): a connection
    /// line, a request line or a `tls_stream` line. Anything else is counted in ``unparsedLines``.
    package mutating func ingest(line: [UInt8]) {
        var end = line.endIndex
        while end > line.startIndex, line[end - 1] == UInt8(ascii: "\n") || line[end - 1] == UInt8(ascii: "\r") {
            end -= 1
        }
        guard end > line.startIndex else { return }
        lines += 1
        version += 1
        let value: JSONValue
        do {
            value = try JSONValue(parsing: line[line.startIndex..<end])
        } catch {
            refuse(error.description)
            return
        }
        let kind = value.objectValue == nil ? nil : LoggedRequest.kind(of: value)
        do throws(LogRecordError) {
            switch kind.flatMap(RecordKind.init(rawValue:)) {
            case .connection?:
                if let id = value[ConnectionField.connectionID]?.intValue,
                    openConnectionRecords.removeValue(forKey: id) != nil
                {
                    openOrder.removeAll { $0 == id }
                }
                ingest(connection: try LoggedConnection(json: value), json: value)
            case .connectionOpen?:
                lines -= 1  // Not a log line: the daemon's note of a tunnel still open.
                ingest(opened: try LoggedConnection(json: value), json: value)
            case .request?, .tlsStream?: take(try LoggedRequest(json: value))
            case nil: throw LogRecordError("\"kind\" is not connection, request or tls_stream", record: "log record")
            }
        } catch {
            refuse(error.description)
        }
    }

    private mutating func ingest(connection record: LoggedConnection, json: JSONValue) {
        let details = ConnectionDetails(json: json)
        let connection = ring.add(record, details: details, connectionID: json[ConnectionField.connectionID]?.intValue)
        slices.add(record)
        captureCounts[record.capture, default: 0] += 1
        if record.isLoad { countApp(record.app) { $0.noteConnection(record.app) } }
        for host in tally.add(record) {
            var seen = activity[host] ?? HostActivity()
            seen.note(
                timestamp: record.timestamp, client: record.device ?? details.client, app: AppKey(record.app),
                limits: limits)
            // The requests that came before the connection line count as sightings too.
            for request in connection.requests {
                seen.note(
                    timestamp: request.timestamp, client: request.device ?? request.client, app: AppKey(request.app),
                    limits: limits)
            }
            activity[host] = seen
        }
    }

    /// Counts a line for its app, within ``Limits/apps``.
    private mutating func countApp(_ agent: AppAgent?, _ count: (inout AppActivity) -> Void) {
        let key = AppKey(agent)
        guard apps[key] != nil || apps.count < limits.apps else {
            unlistedAppLines += 1
            return
        }
        count(&apps[key, default: AppActivity()])
    }

    private mutating func ingest(opened record: LoggedConnection, json: JSONValue) {
        guard let id = json[ConnectionField.connectionID]?.intValue else { return }
        if openConnectionRecords.updateValue(record, forKey: id) == nil { openOrder.append(id) }
        if openOrder.count > limits.openConnections {
            openConnectionRecords[openOrder.removeFirst()] = nil
            forgottenOpenConnections += 1
        }
        // Seen now: a host's row shows from its first judged connection.
        if let host = try? HostIdentity(parsing: record.host), activity[host] != nil || activity.count < limits.hosts {
            activity[host, default: HostActivity()].note(
                timestamp: record.timestamp, client: record.device ?? ConnectionDetails(json: json).client,
                app: AppKey(record.app),
                limits: limits)
        }
    }

    /// The tally with the open connections added: what the hosts table shows (each open one
    /// counted once, as its connection line will count it).
    package var tallyWithOpenConnections: HostTrafficTally {
        guard !openConnectionRecords.isEmpty else { return tally }
        var shown = tally
        for id in openOrder { if let record = openConnectionRecords[id] { _ = shown.add(record) } }
        return shown
    }

    /// Takes a request line as its record (the daemon's own, never written and read back): the
    /// same as ``ingest(line:)`` with its line.
    package mutating func ingest(request: LoggedRequest) {
        lines += 1
        version += 1
        take(request)
    }

    private mutating func take(_ request: LoggedRequest) {
        // Parsed once for the tallies and the activity: this runs for every request line.
        let host = try? HostIdentity(parsing: request.host)
        ring.add(request)
        if let host { tally.add(request, host: host) }
        slices.add(request, host: host)
        if request.kind == .request { countApp(request.app) { $0.noteRequest(request.app) } }
        // Hosts the tally holds already; a host still waiting for its connection line is noted then.
        if let host, activity[host] != nil {
            activity[host]?.note(
                timestamp: request.timestamp, client: request.device ?? request.client, app: AppKey(request.app),
                limits: limits)
        }
    }

    private mutating func refuse(_ reason: String) {
        unparsedLines += 1
        lastUnparsedReason = String(reason.prefix(300))
    }
}
