import ATSPolicy
import Testing

@testable import ProxyCore

/// The one decision every path takes from a verdict: by compliance, mode, where the connection is
/// and intercept mode's block style.
@Suite("ConnectionJudge: a verdict to an action")
struct ConnectionJudgeTests {
    typealias Point = ConnectionJudge.Point
    typealias Decision = ConnectionJudge.Decision

    /// A cleartext load under the ATS defaults (not compliant), and the same requirements with no
    /// violation (compliant).
    static func verdicts() throws -> (compliant: Verdict, broken: Verdict) {
        let policy = try PolicyLoader.load(bytes: Array("<plist version=\"1.0\"><dict/></plist>".utf8), file: "p.plist")
        let http = try policy.requirements(forHost: "api.example.com", scheme: .http, explaining: false)
        let broken = policy.verdict(for: http, observed: nil)
        return (Verdict(requirements: http, violations: []), broken)
    }

    static let rows: [(compliant: Bool, mode: EnforcementMode, point: Point, style: BlockStyle, expected: Decision)] = [
        // Compliant: always allowed, wherever and however blocks would be answered.
        (true, .enforce, .beforeTunnel, .abort, .allow),
        (true, .enforce, .deviceHandshake(pageAvailable: true), .page, .allow),
        (true, .report, .cleartextInTunnel(isHTTPRequest: false), .abort, .allow),
        // Report mode lets every non-compliant connection through.
        (false, .report, .beforeTunnel, .abort, .report),
        (false, .report, .deviceHandshake(pageAvailable: true), .page, .report),
        (false, .report, .cleartextInTunnel(isHTTPRequest: false), .abort, .report),
        // Enforce: before the 200, a 403.
        (false, .enforce, .beforeTunnel, .abort, .respond403),
        (false, .enforce, .beforeTunnel, .page, .respond403),
        // After the 200: an alert, or the page where intercept mode holds the hello and was asked for one.
        (false, .enforce, .deviceHandshake(pageAvailable: false), .abort, .alert),
        (false, .enforce, .deviceHandshake(pageAvailable: false), .page, .alert),
        (false, .enforce, .deviceHandshake(pageAvailable: true), .abort, .alert),
        (false, .enforce, .deviceHandshake(pageAvailable: true), .page, .page),
        // Cleartext in a tunnel: an HTTP request is answered, other bytes cut off.
        (false, .enforce, .cleartextInTunnel(isHTTPRequest: true), .abort, .respond403),
        (false, .enforce, .cleartextInTunnel(isHTTPRequest: false), .page, .cutOff),
    ]

    @Test("compliance, mode, point and block style decide the action", arguments: rows)
    func decides(_ compliant: Bool, _ mode: EnforcementMode, _ point: Point, _ style: BlockStyle, _ expected: Decision)
        throws
    {
        let (good, broken) = try Self.verdicts()
        let decision = ConnectionJudge.decide(compliant ? good : broken, mode: mode, at: point, blockStyle: style)
        #expect(decision == expected)
        #expect(decision.proceeds == (compliant || mode == .report))
    }
}
