import Synchronization

/// The verdict probes of every loop: started, not started (no slot free), finished by outcome, and
/// how long the finished ones took. Updated once per probe (a cache miss), never per connection.
package final class ProbeStatistics: Sendable {
    /// How a started probe ended, from its result.
    package enum Outcome: String, Sendable, CaseIterable {
        /// The ATS-shaped handshake completed: a verdict from its facts.
        case completed
        /// The server refused the ATS-shaped handshake (the permissive one may have said why).
        case atsRefused = "ats_refused"
        /// The upstream answered in another protocol than TLS.
        case notTLS = "not_tls"
        /// The client's destination rules refused every address of the name: nothing was sent.
        case destinationRefused = "destination_refused"
        /// No connection or no handshake: DNS, refused, reset, timed out.
        case unreachable
        /// Stopped before it ended (the loop closed everything): no result, no duration.
        case cancelled

        init(_ result: ProbeResult) {
            if result.refusal != nil {
                self = .destinationRefused
            } else if result.atsHandshakeFailure != nil {
                self = .atsRefused
            } else if result.cleartextUpstream != nil {
                self = .notTLS
            } else if result.upstreamFailure != nil || result.observed == nil {
                self = .unreachable
            } else {
                self = .completed
            }
        }
    }

    private let started = Atomic<Int>(0)
    private let notStarted = Atomic<Int>(0)
    private let outcomes = LabeledCounts<Outcome>()
    /// Seconds from the start of a probe to its result, for those that finished (not cancelled).
    package let durations = DurationHistogram(upperBounds: DurationHistogram.probeBounds)

    package init() {}

    /// Probes started since the process started; each ends as one of ``outcomes`` or is under way.
    package var startedCount: Int { started.load(ordering: .relaxed) }
    /// Probes that did not start because the limit of handshakes under way was reached.
    package var notStartedCount: Int { notStarted.load(ordering: .relaxed) }
    /// Probes ended, by outcome, every outcome listed (zero when none ended so).
    package var finishedCounts: [Outcome: Int] {
        let counted = outcomes.snapshot
        return Dictionary(uniqueKeysWithValues: Outcome.allCases.map { ($0, counted[$0] ?? 0) })
    }

    func probeStarted() { started.add(1, ordering: .relaxed) }

    func probeNotStarted() { notStarted.add(1, ordering: .relaxed) }

    func probeFinished(_ result: ProbeResult, after duration: Duration) {
        outcomes.add(Outcome(result))
        durations.observe(duration)
    }

    func probesCancelled(_ count: Int) {
        if count > 0 { outcomes.add(.cancelled, count) }
    }
}
