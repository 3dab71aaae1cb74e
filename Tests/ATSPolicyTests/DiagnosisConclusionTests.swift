import ATSPolicy
import Testing

/// `diagnose`'s plan and conclusion, on made-up results: which entry is the smallest, and when
/// nothing helps.
@Suite("Diagnostic plan and conclusion")
struct DiagnosisConclusionTests {
    static let host = "api.example.com"
    static let plan = DiagnosticPlan.tests(for: host, on: .ios17)

    @Test("the plan follows nscurl: defaults, all loads, TLS floors 1.3 to 1.0, then forward secrecy combinations")
    func planOrder() {
        #expect(
            Self.plan.prefix(8).map(\.name) == [
                "ATS Default Connection", "Allow All Loads", "TLSv1.3", "TLSv1.2", "TLSv1.1", "TLSv1.0",
                "Disabling Perfect Forward Secrecy", "Disabling Perfect Forward Secrecy and Allowing Insecure HTTP",
            ])
        #expect(Self.plan.filter(\.isFromNSCurl).count == 16)
        #expect(Self.plan.count == 21)
        #expect(Self.plan[2].section == "Configuring TLS exceptions for api.example.com")
    }

    @Test(
        "iOS 9 had no TLS 1.3: its plan has no TLSv1.3 test, and otherwise the same tests in the same order",
        arguments: [OSProfile.ios10, .ios17, .ios26])
    func ios9HasNoTLS13(_ later: OSProfile) {
        let ios9 = DiagnosticPlan.tests(for: Self.host, on: .ios9).map(\.name)
        let other = DiagnosticPlan.tests(for: Self.host, on: later).map(\.name)
        #expect(!ios9.contains { $0.hasPrefix("TLSv1.3") }, "\(ios9)")
        #expect(ios9 == other.filter { !$0.hasPrefix("TLSv1.3") })
        #expect(other.filter { $0.hasPrefix("TLSv1.3") }.count == 4)
    }

    @Test("each exception test's dictionary is the entry it claims to relax, for the URL's host only")
    func dictionariesMatchRelaxations() throws {
        for test in Self.plan {
            guard let relaxes = test.exception else { continue }
            let root = PropertyListNode(.dictionary(ordered: [("NSAppTransportSecurity", test.atsDictionary)]))
            let policy = try TransportSecurityPolicy(root: root)
            let requirements = try policy.requirements(forHost: Self.host)
            #expect(requirements.rule.kind == .exception, "\(test.name)")
            #expect(requirements.requiresForwardSecrecy == !relaxes.disablesForwardSecrecy, "\(test.name)")
            #expect(requirements.cleartextAllowed == relaxes.allowsInsecureHTTPLoads, "\(test.name)")
            #expect((requirements.minimumTLSVersion ?? .tls12) <= (relaxes.minimumTLSVersion ?? .tls13), "\(test.name)")
            #expect(
                try policy.requirements(forHost: "www.\(Self.host)").rule.kind == .default,
                "no subdomains: \(test.name)")
        }
    }

    /// Results where exactly the named tests pass; the rest fail with one violation.
    static func results(passing: Set<String>, failing kind: ViolationKind = .tlsVersion) throws -> [DiagnosticResult] {
        try plan.map { test in
            let requirements = try TransportSecurityPolicy().requirements(forHost: host)
            let violation = Violation(
                kind: kind, error: AppleError(nsurl: -1200, ssl: -9836), explanation: "why", allowedBy: nil)
            return DiagnosticResult(
                test: test,
                verdict: Verdict(requirements: requirements, violations: passing.contains(test.name) ? [] : [violation])
            )
        }
    }

    @Test(
        "the smallest passing entry wins, whatever the order of the tests",
        arguments: [
            (["TLSv1.0", "TLSv1.1", "TLSv1.0 with PFS disabled"], "NSExceptionMinimumTLSVersion = TLSv1.1"),
            (
                ["TLSv1.1 with PFS disabled", "Disabling Perfect Forward Secrecy"],
                "NSExceptionRequiresForwardSecrecy = NO"
            ),
            (
                ["TLSv1.0 with PFS disabled and insecure HTTP allowed", "TLSv1.0 with insecure HTTP allowed"],
                "NSExceptionAllowsInsecureHTTPLoads = YES, NSExceptionMinimumTLSVersion = TLSv1.0"
            ),
            (
                ["Allowing Insecure HTTP", "TLSv1.1 with PFS disabled"],
                "NSExceptionMinimumTLSVersion = TLSv1.1, NSExceptionRequiresForwardSecrecy = NO"
            ),
        ])
    func smallest(passing: [String], expected: String) throws {
        let conclusion = DiagnosisConclusion(
            host: Self.host, results: try Self.results(passing: Set(passing + ["Allow All Loads"])))
        #expect(conclusion.kind == .exceptionNeeded)
        #expect(conclusion.minimalException?.summary == expected)
        #expect(!conclusion.trustFailure)
    }

    @Test("defaults pass: no entry; all loads fail: no setting helps, for trust or for protocol")
    func edges() throws {
        let defaults = DiagnosisConclusion(
            host: Self.host, results: try Self.results(passing: Set(Self.plan.map(\.name))))
        #expect(defaults.kind == .defaultsPass)
        #expect(defaults.minimalException == nil)

        let trust = DiagnosisConclusion(host: Self.host, results: try Self.results(passing: [], failing: .expired))
        #expect(trust.kind == .noSettingHelps)
        #expect(trust.trustFailure)
        #expect(trust.headline == "The server fails default trust: no ATS setting helps.")

        let protocolOnly = DiagnosisConclusion(
            host: Self.host, results: try Self.results(passing: [], failing: .cipherNotATS))
        #expect(protocolOnly.headline == "The server fails what every Apple client requires: no ATS setting helps.")

        let arbitrary = DiagnosisConclusion(host: Self.host, results: try Self.results(passing: ["Allow All Loads"]))
        #expect(arbitrary.kind == .arbitraryLoadsOnly)
        #expect(!arbitrary.trustFailure)
    }
}
