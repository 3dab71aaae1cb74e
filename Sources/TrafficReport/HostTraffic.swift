import ATSPolicy
import LogRecord

/// Everything the log says about one host, gathered from every line naming it: as the request
/// (CONNECT or `http://`) host, or as the server name of a ClientHello that differed from it.
package struct HostTraffic: Sendable {
    package let host: HostIdentity
    package internal(set) var connections = 0
    /// HTTP requests logged inside its intercepted connections (request lines, intercept mode):
    /// counted apart, never as connections, and no part of the host's judgement.
    package internal(set) var requests = 0
    package internal(set) var allowed = 0
    package internal(set) var blocked = 0
    package internal(set) var failed = 0
    /// Lines where the host appeared only as a ClientHello's server name.
    package internal(set) var asServerName = 0
    package internal(set) var ports: Set<Int> = []
    /// Whether the device sent cleartext to it (`http://`, or plain bytes through a tunnel), whatever
    /// became of the request: a failed `http://` request still shows the app loads the host in clear.
    package internal(set) var cleartextSeen = false
    /// Connections intercept mode passed through unread because the device had refused the
    /// proxy's certificate for the host too often (`passthrough: client_rejected_before`).
    package internal(set) var passedThroughAfterRefusal = 0
    /// Connections intercept mode relayed unread, by the log's `passthrough` reason (`pinned`,
    /// `passthrough_pattern`, `not_tls`, `no_http1_alpn`, `client_rejected_before`).
    package internal(set) var passedThrough: [String: Int] = [:]
    /// Why the first failed load failed: its `failure` code and `upstream_error`, as logged.
    package internal(set) var firstFailure: String?
    /// Request lines that were `tls_stream` (bytes inside TLS that were not HTTP).
    package internal(set) var tlsStreams = 0
    /// The TLS versions the probes saw, each with how many lines showed it.
    package internal(set) var versions: [TLSVersion: Int] = [:]
    /// The suites the servers chose, by logged name, each with how many lines showed it.
    package internal(set) var suites: [String: Int] = [:]
    /// Every violation logged for the host, by name, with the first explanation given for it.
    package internal(set) var violations: [String: String] = [:]
    /// Tunnels whose ClientHello the proxy could not read (`hello_unreadable`), and the first reason.
    /// No ATS key is involved: the client sent them; the host's needs come from its other facts.
    package internal(set) var unreadableHellos = 0
    package internal(set) var firstUnreadableHello: String?
    package internal(set) var firstSeen: String?
    package internal(set) var lastSeen: String?

    init(host: HostIdentity) { self.host = host }

    /// Whether any line shows what the host needs: a handshake's facts, cleartext or a violation.
    /// A host seen only in unreachable connections shows nothing.
    package var hasFacts: Bool { cleartextSeen || !versions.isEmpty || !suites.isEmpty || !violations.isEmpty }

    /// The violation names in the vocabulary's order (unknown names last, alphabetically).
    package var violationNames: [String] {
        violations.keys.sorted { a, b in
            switch (ViolationKind(name: a), ViolationKind(name: b)) {
            case (let x?, let y?): x < y
            case (.some, nil): true
            case (nil, .some): false
            case (nil, nil): a < b
            }
        }
    }

    mutating func count(_ record: LoggedConnection) {
        connections += 1
        switch record.action {
        case .allowed: allowed += 1
        case .blocked: blocked += 1
        case .failed:
            failed += 1
            if firstFailure == nil {
                let words = record.upstreamError ?? "no reason logged"
                firstFailure = record.failure.map { "\($0.rawValue): \(words)" } ?? words
            }
        case .denied: break  // Not a load (``LoggedConnection/isLoad``): never counted here.
        }
        if let reason = record.passthrough { passedThrough[reason, default: 0] += 1 }
        if let timestamp = record.timestamp {
            // RFC 3339 UTC timestamps with the same precision order as text.
            if firstSeen.map({ timestamp < $0 }) ?? true { firstSeen = timestamp }
            if lastSeen.map({ timestamp > $0 }) ?? true { lastSeen = timestamp }
        }
    }

    mutating func noteRequest(_ record: LoggedConnection) {
        if let port = record.port { ports.insert(port) }
        if record.isCleartext { cleartextSeen = true }
        if record.passthrough == "client_rejected_before" { passedThroughAfterRefusal += 1 }
        if let reason = record.helloUnreadable {
            unreadableHellos += 1
            if firstUnreadableHello == nil { firstUnreadableHello = reason }
        }
        if let server = record.server {
            if let version = server.version { versions[version, default: 0] += 1 }
            if let suite = server.cipherName { suites[suite, default: 0] += 1 }
        }
        note(record.violations, record.explanations)
    }

    mutating func noteServerName(_ check: LoggedConnection.ServerNameCheck) {
        asServerName += 1
        note(check.violations, check.explanations)
    }

    private mutating func note(_ names: [String], _ explanations: [String]) {
        for (index, name) in names.enumerated() where violations[name] == nil {
            violations[name] = index < explanations.count ? explanations[index] : ""
        }
    }
}

extension LogCollection {
    /// The records grouped by host (the request host, and a differing SNI host), in first-seen order.
    /// Lines that are not loads (malformed heads, requests that were not proxy requests) and lines whose
    /// host is not a valid host name are left out. Request lines count only for hosts the connection
    /// lines named: a request line alone (its connection's line torn or in another file) adds no host,
    /// and so changes no assessment. The same tally as the live view's (``HostTrafficTally``).
    package var hostTraffic: [HostTraffic] {
        var tally = HostTrafficTally()
        for record in records { tally.add(record) }
        for request in requests { tally.add(request) }
        return tally.hosts
    }

    /// Whether any request line (`"kind":"request"`) was read: `report` shows request counts then.
    package var hasRequests: Bool { requests.contains { $0.kind == .request } }
}
