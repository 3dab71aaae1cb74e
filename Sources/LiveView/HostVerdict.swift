import TrafficReport

/// What happened to a host's loads, worst first: one word for the table and its filter.
package enum HostVerdict: String, Sendable, CaseIterable {
    /// At least one load was blocked (enforce mode).
    case blocked
    /// Loads broke ATS and were let through (report mode).
    case notCompliant = "not_compliant"
    /// Every load failed upstream (unreachable, refused), none was judged allowed.
    case failed
    /// Every load passed.
    case allowed

    /// The verdict of a host's tally: blocked over not compliant over failed over allowed.
    package init(_ traffic: HostTraffic) {
        if traffic.blocked > 0 {
            self = .blocked
        } else if !traffic.violations.isEmpty {
            self = .notCompliant
        } else if traffic.failed > 0, traffic.allowed == 0 {
            self = .failed
        } else {
            self = .allowed
        }
    }

    /// In words, for the page.
    package var label: String {
        switch self {
        case .blocked: "blocked"
        case .notCompliant: "not compliant (let through in report mode)"
        case .failed: "failed"
        case .allowed: "allowed"
        }
    }
}
