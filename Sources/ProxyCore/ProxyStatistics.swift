import ATSPolicy
import LogRecord
import Synchronization

/// Counters every loop updates and `status` reads: connections open and accepted, and what was
/// done with each logged request. Lock-free, so the per-connection path never waits on a reader.
package final class ProxyStatistics: Sendable {
    private let accepted = Atomic<Int>(0)
    private let open = Atomic<Int>(0)
    /// The most connections open at once since ``takePeakOpenConnections()`` last read it.
    private let peakOpen = Atomic<Int>(0)
    private let allowed = Atomic<Int>(0)
    private let blocked = Atomic<Int>(0)
    private let failed = Atomic<Int>(0)
    private let denied = Atomic<Int>(0)
    private let transparent = Atomic<Int>(0)
    private let wireguard = Atomic<Int>(0)
    private let bytesUp = Atomic<Int>(0)
    private let bytesDown = Atomic<Int>(0)
    private let violations = LabeledCounts<String>()
    private let failures = LabeledCounts<Failure>()
    private let requests = LabeledCounts<RequestClass>()
    /// The verdict probes of every loop.
    package let probes = ProbeStatistics()

    package init() {}

    /// A point-in-time copy of the counters.
    package struct Snapshot: Sendable, Equatable {
        /// Client connections accepted since start.
        package var accepted: Int
        /// Client connections open now.
        package var open: Int
        /// Logged requests and tunnels, by action.
        package var allowed: Int
        package var blocked: Int
        package var failed: Int
        /// Refused by `--allow-client` or the destination rules.
        package var denied: Int
        /// Logged requests and tunnels that came by each capture path (``CapturePath``).
        package var byCapture: [CapturePath: Int]
        /// Bytes relayed, client to server and back, in logged requests.
        package var bytesUp: Int
        package var bytesDown: Int
    }

    package var snapshot: Snapshot {
        Snapshot(
            accepted: accepted.load(ordering: .relaxed), open: open.load(ordering: .relaxed),
            allowed: allowed.load(ordering: .relaxed), blocked: blocked.load(ordering: .relaxed),
            failed: failed.load(ordering: .relaxed), denied: denied.load(ordering: .relaxed),
            byCapture: Self.byCapture(
                lines: allowed.load(ordering: .relaxed) + blocked.load(ordering: .relaxed)
                    + failed.load(ordering: .relaxed) + denied.load(ordering: .relaxed),
                transparent: transparent.load(ordering: .relaxed), wireguard: wireguard.load(ordering: .relaxed)),
            bytesUp: bytesUp.load(ordering: .relaxed),
            bytesDown: bytesDown.load(ordering: .relaxed))
    }

    /// Lines by capture path: those not captured came through the proxy setting (each counter is
    /// read apart, so a line logged meanwhile may show in one and not the other: never below 0).
    private static func byCapture(lines: Int, transparent: Int, wireguard: Int) -> [CapturePath: Int] {
        [.proxy: max(0, lines - transparent - wireguard), .transparent: transparent, .wireguard: wireguard]
    }

    /// Client connections open now (what a graceful stop waits for).
    package var openConnections: Int { open.load(ordering: .relaxed) }

    /// The most connections open at once since the last call (or the start), then starts again
    /// from the number open now: a reader that samples now and then still sees a burst that came
    /// and went between two samples.
    package func takePeakOpenConnections() -> Int {
        peakOpen.exchange(open.load(ordering: .relaxed), ordering: .relaxed)
    }

    func connectionOpened() {
        accepted.add(1, ordering: .relaxed)
        let now = open.add(1, ordering: .relaxed).newValue
        var peak = peakOpen.load(ordering: .relaxed)
        while now > peak {
            let (exchanged, original) = peakOpen.compareExchange(expected: peak, desired: now, ordering: .relaxed)
            if exchanged { break }
            peak = original
        }
    }

    func connectionClosed() { open.subtract(1, ordering: .relaxed) }

    func logged(_ record: ConnectionRecord) {
        switch record.action {
        case .allowed: allowed.add(1, ordering: .relaxed)
        case .blocked: blocked.add(1, ordering: .relaxed)
        case .failed: failed.add(1, ordering: .relaxed)
        case .denied: denied.add(1, ordering: .relaxed)
        }
        switch record.capture {
        case .proxy: break
        case .transparent: transparent.add(1, ordering: .relaxed)
        case .wireguard: wireguard.add(1, ordering: .relaxed)
        }
        bytesUp.add(Int(record.bytesUp), ordering: .relaxed)
        bytesDown.add(Int(record.bytesDown), ordering: .relaxed)
        // Most lines have no violation: they take no lock.
        let names = record.violationNames
        if !names.isEmpty { violations.add(names) }
        if let failure = record.failure { failures.add(failure) }
    }

    /// Logged connections per failure code (docs/log-format.md): a device refusing the minted
    /// certificate is told from one offering an old TLS version, a probe limit from a handshake.
    package var failureCounts: [Failure: Int] { failures.snapshot }

    /// Logged connections per violation name (a line naming a violation twice counts once).
    package var violationCounts: [String: Int] { violations.snapshot }

    /// Intercept mode's logged HTTP requests, by their connection's action and their status class.
    package var requestCounts: [RequestClass: Int] { requests.snapshot }

    /// Counts an intercepted HTTP request's line; the `tls_stream` lines (bytes that were not
    /// HTTP) are not requests and are not counted.
    func logged(request: RequestRecord) {
        guard request.kind == .request else { return }
        requests.add(RequestClass(action: request.connection.action, status: request.status))
    }
}

/// What a request is counted by: its connection's action and the class of its status.
package struct RequestClass: Sendable, Hashable {
    package var action: ConnectionRecord.Action
    /// `1xx` to `5xx`, `none` when no response came (the upstream failed), `other` beyond.
    package var statusClass: String

    package init(action: ConnectionRecord.Action, status: Int?) {
        self.action = action
        guard let status else {
            statusClass = "none"
            return
        }
        statusClass = (100...599).contains(status) ? "\(status / 100)xx" : "other"
    }
}

extension ConnectionRecord {
    /// The names of the violations the line lists, each once, in order.
    var violationNames: [String] {
        let first = verdict?.violations ?? []
        let second = serverNameVerdict?.violations ?? []
        guard !first.isEmpty || !second.isEmpty else { return [] }
        var names: [String] = []
        for violation in first + second where !names.contains(violation.kind.name) { names.append(violation.kind.name) }
        return names
    }
}
