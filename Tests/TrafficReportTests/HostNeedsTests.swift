import ATSPolicy
import Testing
import TrafficReport

@Suite("What one host needs, from the logged facts")
struct HostNeedsTests {
    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var lines: [String]
        var host: String
        var disposition: HostAssessment.Disposition
        /// SuggestedException.summary of the needs.
        var needs: String
        /// The blockers' violation names.
        var blockers: [String] = []
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(
            name: "TLS 1.3 passes with the defaults",
            lines: [logLine("a.example.com", version: "TLSv1.3", cipher: tls13)], host: "a.example.com",
            disposition: .compliant, needs: "no exception needed"),
        Row(
            name: "TLS 1.1 and TLS 1.0 seen: the floor goes to the lowest",
            lines: [
                logLine("a.example.com", version: "TLSv1.1", cipher: ecdheCBC),
                logLine("a.example.com", version: "TLSv1.0", cipher: ecdheCBC),
            ],
            host: "a.example.com", disposition: .needsException, needs: "NSExceptionMinimumTLSVersion = TLSv1.0"),
        Row(
            name: "an RSA key-exchange suite: forward secrecy off, nothing else",
            lines: [
                logLine(
                    "a.example.com", action: "blocked", version: "TLSv1.2", cipher: rsaGCM,
                    violations: ["cipher_not_fs"])
            ],
            host: "a.example.com", disposition: .needsException, needs: "NSExceptionRequiresForwardSecrecy = NO"),
        Row(
            name: "already excepted in the daemon's policy (no violation logged): the facts still tell",
            lines: [logLine("a.example.com", version: "TLSv1.2", cipher: rsaGCM, rule: "exception")],
            host: "a.example.com", disposition: .needsException, needs: "NSExceptionRequiresForwardSecrecy = NO"),
        Row(
            name: "http:// allowed",
            lines: [logLine("a.example.com", scheme: "http", rule: "exception")], host: "a.example.com",
            disposition: .needsException, needs: "NSExceptionAllowsInsecureHTTPLoads = YES"),
        Row(
            name: "http:// that failed upstream still needs cleartext",
            lines: [logLine("a.example.com", scheme: "http", action: "failed", violations: ["cleartext"])],
            host: "a.example.com",
            disposition: .needsException, needs: "NSExceptionAllowsInsecureHTTPLoads = YES"),
        Row(
            name: "cleartext through a CONNECT tunnel",
            lines: [logLine("a.example.com", action: "blocked", tunnel: "cleartext")], host: "a.example.com",
            disposition: .needsException, needs: "NSExceptionAllowsInsecureHTTPLoads = YES"),
        Row(
            name: "only unreachable: nothing known",
            lines: [logLine("a.example.com", action: "failed")], host: "a.example.com", disposition: .unreached,
            needs: "no exception needed"),
        Row(
            name: "an expired certificate is not fixable, whatever else it needs",
            lines: [
                logLine(
                    "a.example.com", action: "blocked", version: "TLSv1.0", cipher: ecdheCBC,
                    violations: ["tls_version", "expired"])
            ],
            host: "a.example.com", disposition: .unfixable, needs: "NSExceptionMinimumTLSVersion = TLSv1.0",
            blockers: ["expired"]),
        Row(
            name: "SSL 3.0 is below anything iOS speaks",
            lines: [
                logLine(
                    "a.example.com", action: "blocked", version: "SSLv3", cipher: ecdheCBC, violations: ["tls_version"])
            ],
            host: "a.example.com", disposition: .unfixable, needs: "no exception needed", blockers: ["tls_version"]),
        Row(
            name: "a DHE suite no Apple client offers",
            lines: [
                logLine(
                    "a.example.com", action: "blocked", version: "TLSv1.2",
                    cipher: "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", violations: ["cipher_not_ats"])
            ],
            host: "a.example.com", disposition: .unfixable, needs: "no exception needed", blockers: ["cipher_not_ats"]),
        Row(
            name: "3DES over https only: it would take cleartext to allow it",
            lines: [
                logLine(
                    "a.example.com", action: "blocked", version: "TLSv1.2", cipher: "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
                    violations: ["cipher_not_ats"])
            ],
            host: "a.example.com", disposition: .unfixable, needs: "no exception needed", blockers: ["cipher_not_ats"]),
        Row(
            name: "3DES on a host loaded over http:// anyway: forward secrecy off lifts the suite restriction",
            lines: [
                logLine("a.example.com", scheme: "http"),
                logLine(
                    "a.example.com", action: "blocked", version: "TLSv1.2", cipher: "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
                    violations: ["cipher_not_ats"]),
            ],
            host: "a.example.com", disposition: .needsException,
            needs: "NSExceptionAllowsInsecureHTTPLoads = YES, NSExceptionRequiresForwardSecrecy = NO"),
        Row(
            name: "a local host is exempt, even over http:// and TLS 1.0",
            lines: [
                logLine("localhost", scheme: "http", rule: "local"),
                logLine("printer.local", version: "TLSv1.0", cipher: ecdheCBC, rule: "local"),
            ],
            host: "printer.local", disposition: .exempt, needs: "no exception needed"),
        Row(
            name: "a local host with an untrusted certificate still fails default trust",
            lines: [
                logLine(
                    "printer.local", action: "blocked", version: "TLSv1.2", cipher: ecdheGCM,
                    violations: ["untrusted_chain"], rule: "local")
            ],
            host: "printer.local", disposition: .unfixable, needs: "no exception needed", blockers: ["untrusted_chain"]),
        Row(
            name: "a ClientHello's server name is judged by its violation's words",
            lines: [
                logLine(
                    "shared.example.com", action: "blocked", version: "TLSv1.2", cipher: ecdheGCM,
                    sniCheck: (
                        "assets.example.com", ["tls_version"],
                        ["the server negotiated TLS 1.1; ATS requires TLS 1.2 or later for assets.example.com"]
                    ))
            ],
            host: "assets.example.com", disposition: .needsException, needs: "NSExceptionMinimumTLSVersion = TLSv1.1"),
        Row(
            name: "a TLS 1.3 suite no Apple client offers",
            lines: [
                logLine(
                    "a.example.com", action: "blocked", version: "TLSv1.3", cipher: "TLS_AES_128_CCM_SHA256",
                    violations: ["cipher_not_ats"])
            ],
            host: "a.example.com", disposition: .unfixable, needs: "no exception needed", blockers: ["cipher_not_ats"]),
        Row(
            name: "an ATS handshake that failed though the facts break no rule (a curve Apple does not offer)",
            lines: [
                logLine(
                    "a.example.com", action: "blocked", version: "TLSv1.3", cipher: tls13,
                    violations: ["handshake_failure"])
            ],
            host: "a.example.com", disposition: .unfixable, needs: "no exception needed",
            blockers: ["handshake_failure"]),
        Row(
            name: "a wrong pin is not an exception's business",
            lines: [
                logLine(
                    "a.example.com", action: "blocked", version: "TLSv1.3", cipher: tls13, violations: ["pin_mismatch"])
            ],
            host: "a.example.com", disposition: .unfixable, needs: "no exception needed", blockers: ["pin_mismatch"]),
    ]

    @Test("needs and disposition", arguments: rows)
    func needs(_ row: Row) throws {
        let report = report(row.lines)
        let assessment = try #require(report.assessment(row.host))
        #expect(assessment.disposition == row.disposition)
        #expect(assessment.needs.summary == row.needs)
        #expect(assessment.blockers.map(\.violation) == row.blockers)
    }

    @Test("iOS 26 refuses TLS 1.0/1.1 for every load: a TLS 1.0 host is not fixable there, a local one neither")
    func ios26() throws {
        let refusal = "iOS 26 refuses TLS 1.0 and 1.1 for every load"
        let lines = [logLine("a.example.com", version: "TLSv1.0", cipher: ecdheCBC)]
        let assessment = try #require(
            report(lines, settings: PolicySettings(osProfile: .ios26)).assessment("a.example.com"))
        #expect(assessment.disposition == .unfixable)
        #expect(assessment.blockers.first?.reason.contains(refusal) == true)
        // The local-host exemption does not bring TLS 1.0 back on iOS 26 (docs/ats-rules.md, "The decisions",
        // os_profile).
        let local = [logLine("printer", version: "TLSv1.0", cipher: ecdheCBC)]
        let ios26 = try #require(report(local, settings: PolicySettings(osProfile: .ios26)).assessment("printer"))
        #expect(ios26.blockers.map(\.violation) == ["tls_version"])
        #expect(ios26.blockers.first?.reason.contains(refusal) == true)
        let ios17 = try #require(report(local, settings: PolicySettings(osProfile: .ios17)).assessment("printer"))
        #expect(ios17.blockers.isEmpty)
    }

    @Test("the documented cipher profile knows ECDHE-SHA384 CBC suites; the current one does not")
    func cipherProfiles() throws {
        let lines = [logLine("a.example.com", version: "TLSv1.2", cipher: "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384")]
        #expect(
            report(lines, settings: PolicySettings(cipherProfile: .documented)).assessment("a.example.com")?.disposition
                == .compliant)
        #expect(report(lines).assessment("a.example.com")?.disposition == .unfixable)
    }

    @Test("lines that are not loads (a malformed head) make no host; the counts add up")
    func counts() throws {
        let report = report([
            logLine("-", scheme: "http", action: "failed", rule: "default", method: "-"),
            logLine("a.example.com", version: "TLSv1.3", cipher: tls13),
            logLine(
                "a.example.com", action: "blocked", version: "TLSv1.0", cipher: ecdheCBC, violations: ["tls_version"]),
            logLine("a.example.com", action: "failed"),
        ])
        #expect(report.assessments.map(\.host.description) == ["a.example.com"])
        let traffic = try #require(report.assessment("a.example.com")).traffic
        #expect([traffic.connections, traffic.allowed, traffic.blocked, traffic.failed] == [3, 1, 1, 1])
        #expect(traffic.versions == [.tls13: 1, .tls10: 1])
    }
}
