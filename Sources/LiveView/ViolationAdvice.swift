import ATSPolicy
import TrafficReport

/// One violation logged for a host, in words, with what would allow it: the Info.plist key the
/// report's suggestion sets for it, or why no key can (the report's blocker).
package struct ViolationAdvice: Sendable, Equatable {
    /// The violation's name (`tls_version`).
    package var name: String
    /// The explanation logged with its first occurrence.
    package var explanation: String
    /// `NSExceptionDomains › legacy.example.com › NSExceptionMinimumTLSVersion = TLSv1.0`, when a key allows it.
    package var allowedBy: String?
    /// Why no Info.plist key allows it, when none does.
    package var noKey: String?

    /// The advice for each of the host's violations, in the vocabulary's order.
    /// - Parameter entryKey: the suggested entry that covers the host (a folded parent, or the host).
    static func advice(for assessment: HostAssessment, entryKey: String?) -> [ViolationAdvice] {
        let traffic = assessment.traffic
        let entry = ATSKey.exceptionDomains + " › " + (entryKey ?? assessment.host.description) + " › "
        let needs = assessment.needs
        return traffic.violationNames.map { name in
            var advice = ViolationAdvice(name: name, explanation: traffic.violations[name] ?? "")
            if let blocker = assessment.blockers.first(where: { $0.violation == name }) {
                // The blocker's reason repeats the logged explanation first: shown once is enough.
                let repeated = advice.explanation + "; "
                advice.noKey =
                    !advice.explanation.isEmpty && blocker.reason.hasPrefix(repeated)
                    ? String(blocker.reason.dropFirst(repeated.count)) : blocker.reason
                return advice
            }
            if assessment.isLocal {
                // Exempt under the defaults: the daemon's policy took the exemption away (NSAllowsLocalNetworking).
                advice.allowedBy = "NSAllowsLocalNetworking = YES (a local host is exempt from ATS under the defaults)"
                return advice
            }
            switch name {
            case "cleartext" where needs.allowsInsecureHTTPLoads:
                advice.allowedBy = entry + ATSKey.allowsInsecureHTTPLoads + " = YES"
            case "tls_version":
                advice.allowedBy = needs.minimumTLSVersion.map {
                    entry + ATSKey.minimumTLSVersion + " = " + $0.plistName
                }
            case "cipher_not_fs" where needs.disablesForwardSecrecy:
                advice.allowedBy = entry + ATSKey.requiresForwardSecrecy + " = NO"
            default:
                break
            }
            return advice
        }
    }
}
