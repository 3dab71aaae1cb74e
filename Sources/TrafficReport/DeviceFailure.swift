import ATSPolicy

/// A host whose logged traffic would fail on an iPhone, and why: what `report --fail-on violation`
/// gates on and `report --format junit` marks failed.
package struct DeviceFailure: Sendable, Equatable {
    package var host: String
    /// One line per reason: a violation and its explanation, or a key the policy lacks.
    package var reasons: [String]
}

extension TrafficReport {
    /// The hosts that would fail on the device, in the report's order.
    ///
    /// Without a current policy, the log's own verdicts decide: a host with a logged violation
    /// failed under the policy the proxy ran with (in CI, the app's). With one (`--policy`), the
    /// policy decides: a host fails when the policy lacks a key its traffic needs, or when no key
    /// could help it (a certificate, a pin). Local hosts are exempt from ATS and never fail.
    package var deviceFailures: [DeviceFailure] {
        let lacking = Dictionary(grouping: missing ?? [], by: \.host)
        return assessments.compactMap { assessment in
            guard assessment.disposition != .exempt else { return nil }
            var reasons = assessment.blockers.map { "\($0.violation): \($0.reason)" }
            if missing != nil {
                reasons += (lacking[assessment.host.description] ?? []).map {
                    "the policy lacks \($0.path) = \($0.value): \($0.reason)"
                }
            } else {
                let blocking = Set(assessment.blockers.map(\.violation))
                for name in assessment.traffic.violationNames where !blocking.contains(name) {
                    reasons.append("\(name): \(assessment.traffic.violations[name] ?? "")")
                }
            }
            return reasons.isEmpty ? nil : DeviceFailure(host: assessment.host.description, reasons: reasons)
        }
    }
}
