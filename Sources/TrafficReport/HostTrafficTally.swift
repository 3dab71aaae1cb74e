import ATSPolicy
import LogRecord

/// The log's lines gathered per host one at a time, as they are read or written: what
/// ``LogCollection/hostTraffic`` gives for a whole collection, and the live view keeps up to date.
///
/// The result does not depend on the order of the lines: a request line counts for its host whether
/// the connection line naming that host came before it or comes later (the daemon logs a connection
/// when it ends, after its requests). A request line whose host no connection line names adds no
/// host, as in `report`: it waits, counted, until one does.
///
/// With ``maximumHosts``, hosts beyond it are not kept: the lines about them are counted in
/// ``droppedLines`` and ``droppedRequests``, and the hosts kept are judged as if those lines were absent.
package struct HostTrafficTally: Sendable {
    /// The most hosts kept (and the most hosts whose request lines wait for a connection line).
    package let maximumHosts: Int
    /// Every host seen, in first-seen order (the order of the connection lines that named them).
    package private(set) var hosts: [HostTraffic] = []
    /// Connection lines (or their server-name halves) about hosts beyond ``maximumHosts``.
    package private(set) var droppedLines = 0
    /// Request lines about hosts beyond ``maximumHosts``, never counted.
    package private(set) var droppedRequests = 0
    private var index: [HostIdentity: Int] = [:]
    /// Request lines for hosts no connection line has named yet.
    private var waitingRequests: [HostIdentity: Int] = [:]
    /// `tls_stream` lines that came before their host's first connection line, as request lines do.
    private var waitingStreams: [HostIdentity: Int] = [:]

    package init(maximumHosts: Int = .max) {
        self.maximumHosts = max(0, maximumHosts)
    }

    /// The host's traffic so far, or nil when no connection line has named it.
    package subscript(host: HostIdentity) -> HostTraffic? { index[host].map { hosts[$0] } }

    /// Counts a connection line for its request host and, when its ClientHello named another host,
    /// for that one. Lines that are not loads (``LoggedConnection/isLoad``) and hosts that are not
    /// valid host names are left out.
    /// - Returns: the hosts the line was counted for.
    @discardableResult
    package mutating func add(_ record: LoggedConnection) -> [HostIdentity] {
        guard record.isLoad else { return [] }
        var counted: [HostIdentity] = []
        let request = slot(for: record.host)
        if let request {
            hosts[request].count(record)
            hosts[request].noteRequest(record)
            counted.append(hosts[request].host)
        }
        if let check = record.serverNameCheck, let named = slot(for: check.host), named != request {
            hosts[named].count(record)
            hosts[named].noteServerName(check)
            counted.append(hosts[named].host)
        }
        return counted
    }

    /// Counts a request line (`"kind":"request"`; `tls_stream` lines are not requests) for its host,
    /// now or once a connection line names the host.
    package mutating func add(_ request: LoggedRequest) {
        guard let host = try? HostIdentity(parsing: request.host) else { return }
        add(request, host: host)
    }

    /// ``add(_:)`` with the request's host parsed already: the live view parses it once for its
    /// tallies and its hosts' activity.
    package mutating func add(_ request: LoggedRequest, host: HostIdentity) {
        guard request.kind == .request else {
            // A tls_stream line: not a request, but why a host with connections has none.
            if let existing = index[host] {
                hosts[existing].tlsStreams += 1
            } else if waitingStreams[host] != nil || waitingStreams.count < maximumHosts {
                waitingStreams[host, default: 0] += 1
            }
            return
        }
        if let existing = index[host] {
            hosts[existing].requests += 1
        } else if waitingRequests[host] != nil || waitingRequests.count < maximumHosts {
            waitingRequests[host, default: 0] += 1
        } else {
            droppedRequests += 1
        }
    }

    /// The host's place in ``hosts``, added (with the request lines that waited for it) when new;
    /// nil for a name that is not a host, or a new host beyond the cap.
    private mutating func slot(for name: String) -> Int? {
        guard let host = try? HostIdentity(parsing: name) else { return nil }
        if let existing = index[host] { return existing }
        guard hosts.count < maximumHosts else {
            droppedLines += 1
            // Its waiting request lines will never count: say so, and free their place.
            droppedRequests += waitingRequests.removeValue(forKey: host) ?? 0
            waitingStreams[host] = nil
            return nil
        }
        index[host] = hosts.count
        var traffic = HostTraffic(host: host)
        traffic.requests = waitingRequests.removeValue(forKey: host) ?? 0
        traffic.tlsStreams = waitingStreams.removeValue(forKey: host) ?? 0
        hosts.append(traffic)
        return hosts.count - 1
    }
}
