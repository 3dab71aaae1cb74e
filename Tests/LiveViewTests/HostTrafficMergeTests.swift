import ATSPolicy
import Testing
import TrafficReport

@testable import LiveView

/// `HostTraffic.absorb(_:)`, which the plist of a filter adds the tallies per app and device up with.
@Suite("HostTraffic.absorb: two tallies of a host added up are the tally of all their lines")
struct HostTrafficMergeTests {
    /// Every field of a host's traffic, as text to compare.
    static func fingerprint(_ traffic: HostTraffic) -> String {
        """
        \(traffic.host) c\(traffic.connections) r\(traffic.requests) a\(traffic.allowed) b\(traffic.blocked) \
        f\(traffic.failed) sni\(traffic.asServerName) ports\(traffic.ports.sorted()) clear\(traffic.cleartextSeen) \
        refused\(traffic.passedThroughAfterRefusal) through\(traffic.passedThrough.sorted { $0.key < $1.key }) \
        failure\(traffic.firstFailure ?? "-") streams\(traffic.tlsStreams) \
        versions\(traffic.versions.map { "\($0.key)=\($0.value)" }.sorted()) \
        suites\(traffic.suites.sorted { $0.key < $1.key }) violations\(traffic.violations.sorted { $0.key < $1.key }) \
        hellos\(traffic.unreadableHellos) \(traffic.firstUnreadableHello ?? "-") \
        seen\(traffic.firstSeen ?? "-")...\(traffic.lastSeen ?? "-")
        """
    }

    /// The hosts of `lines` tallied as `report` tallies them.
    static func hosts(_ lines: [String]) -> [HostIdentity: HostTraffic] {
        Dictionary(uniqueKeysWithValues: liveSite(lines).traffic.tally.hosts.map { ($0.host, $0) })
    }

    /// Connection lines of three recorded days and two more: failures, violations, TLS versions,
    /// suites, cleartext, server-name checks.
    static let lines =
        RecordedLines.reportDayBefore + RecordedLines.reportDay + RecordedLines.reportModeDay + [
            connectionLine("api.example.com", ts: "2026-11-18T00:00:00.000Z", action: "failed", upstreamError: "reset"),
            connectionLine("api.example.com", ts: "2026-11-30T00:00:00.000Z", violations: ["tls_version"]),
        ]

    @Test(
        "split anywhere, the earlier part absorbing the later gives every field of the whole",
        arguments: [1, 8, 17, 30])
    func splitAndMerge(at split: Int) throws {
        // Intercept mode's lines go whole into the later part: a request line counts only in a tally
        // that holds its host's connection line, so splitting them apart would change the tallies,
        // not test the merge.
        let lines = Self.lines + RecordedLines.intercept
        let (first, second) = (Self.hosts(Array(Self.lines[..<split])), Self.hosts(Array(lines[split...])))
        let whole = Self.hosts(lines)
        var sharedHosts = 0
        for (host, all) in whole {
            var merged: HostTraffic
            switch (first[host], second[host]) {
            case (let a?, let b?):
                sharedHosts += 1
                merged = a
                merged.absorb(b)
            case (let a?, nil): merged = a
            case (nil, let b?): merged = b
            case (nil, nil):
                Issue.record("\(host) in neither part")
                continue
            }
            #expect(Self.fingerprint(merged) == Self.fingerprint(all))
        }
        #expect(sharedHosts > 0, "the split leaves some host on both sides")
    }

    @Test("times join as the earlier first sight and the later last; a first failure stays the absorbing one's")
    func firstAndLast() throws {
        let host = "api.example.com"
        let early = try #require(
            Self.hosts([connectionLine(host, ts: "2026-11-20T00:00:00.000Z", action: "failed", upstreamError: "one")])[
                HostIdentity(parsing: host)])
        var late = try #require(
            Self.hosts([connectionLine(host, ts: "2026-11-22T00:00:00.000Z", action: "failed", upstreamError: "two")])[
                HostIdentity(parsing: host)])
        late.absorb(early)
        #expect(late.firstSeen == "2026-11-20T00:00:00.000Z")
        #expect(late.lastSeen == "2026-11-22T00:00:00.000Z")
        #expect(late.failed == 2)
        #expect(late.firstFailure == "two", "the absorbing value's own first failure")
    }
}
