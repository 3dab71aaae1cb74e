import TrafficReport

/// What happened to a host's loads, worst first, as the live view's filter and colour show it.
package enum HostVerdict: String, Sendable, CaseIterable {
    /// At least one load was blocked (enforce mode).
    case blocked
    /// Loads broke ATS and were let through (report mode).
    case notCompliant = "not_compliant"
    /// Every load failed (unreachable, refused, the device's handshake failed), none was let through.
    case failed
    /// Intercept mode relayed every load unread (pinned, `--passthrough`, not TLS, the device
    /// refusing the proxy's certificate): the loads were judged by the probe, their requests not seen.
    case passedThrough = "passed_through"
    /// Every load passed.
    case allowed

    /// The verdict of a host's tally: blocked over not compliant over failed over passed through
    /// over allowed.
    package init(_ traffic: HostTraffic) {
        let passed = traffic.passedThrough.values.reduce(0, +)
        if traffic.blocked > 0 {
            self = .blocked
        } else if !traffic.violations.isEmpty {
            self = .notCompliant
        } else if traffic.failed > 0, traffic.allowed == 0 {
            self = .failed
        } else if passed > 0, passed >= traffic.allowed {
            self = .passedThrough
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
        case .passedThrough: "passed through"
        case .allowed: "allowed"
        }
    }

    /// A `passthrough` reason of the log, in words.
    static func passthroughWords(_ reason: String) -> String {
        switch reason {
        case "pinned": "the app pins it (NSPinnedDomains): a minted certificate would fail"
        case "passthrough_pattern": "--passthrough names it"
        case "not_tls": "the device's first bytes were not TLS"
        case "no_http1_alpn": "the device offered no HTTP the proxy relays (ALPN)"
        case "client_rejected_before": "a device refused the proxy's certificate (atsproxyctl passthrough list)"
        default: reason
        }
    }
}

extension HostTraffic {
    /// What the verdict cell says beyond the verdict: the violations, the failure, why loads were
    /// passed through, and, where intercept mode saw requests elsewhere, why this host shows none.
    /// - Parameter requestsExpected: whether the traffic holds request lines at all (intercept mode).
    func verdictReasons(_ verdict: HostVerdict, requestsExpected: Bool) -> [String] {
        var reasons: [String] = []
        switch verdict {
        case .blocked, .notCompliant:
            reasons.append(violationNames.joined(separator: ", "))
        case .failed:
            reasons.append(firstFailure ?? "no reason logged")
        case .passedThrough, .allowed:
            break
        }
        let passed = passedThrough.sorted { $0.value > $1.value || ($0.value == $1.value && $0.key < $1.key) }
        if !passed.isEmpty {
            let words = passed.map { "\(HostVerdict.passthroughWords($0.key)) (\($0.value))" }.joined(separator: "; ")
            reasons.append(verdict == .passedThrough ? words : "passed through unread: " + words)
        }
        if requestsExpected, connections > 0, requests == 0 {
            if !passed.isEmpty {
                reasons.append("no request seen: its connections were passed through")
            } else if tlsStreams > 0 {
                reasons.append("no request seen: the bytes inside its TLS were not HTTP (tls_stream)")
            } else if verdict == .blocked || verdict == .failed {
                reasons.append("no request seen: no connection got as far as one")
            } else {
                reasons.append("no request seen: the device sent none on its connections")
            }
        }
        return reasons.filter { !$0.isEmpty }
    }
}
