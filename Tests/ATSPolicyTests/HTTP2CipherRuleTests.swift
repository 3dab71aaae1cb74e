import ATSPolicy
import Testing

/// RFC 9113 §9.2.2 under ATS: HTTP/2 over TLS 1.2 needs an ephemeral key exchange with an AEAD
/// cipher, so a CBC suite that ATS allows (the documented profile's ECDHE CBC suites) is
/// `h2_inadequate_security` when, and only when, the server chose h2 (docs/ats-rules.md).
@Suite("RFC 9113's cipher rule for HTTP/2 (h2_inadequate_security)")
struct HTTP2CipherRuleTests: ATSSpecFixture {
    struct Row: ATSSpecRow {
        let label: String
        let alpn: String?
        let version: TLSVersion
        let suite: UInt16
        let violations: [String]
    }

    static let rows: [Row] = [
        Row(
            label: "h2 with ECDHE-RSA-AES128-SHA256 (C027), which ATS allows", alpn: "h2", version: .tls12,
            suite: 0xC027, violations: ["h2_inadequate_security"]),
        Row(
            label: "h2 with ECDHE-ECDSA-AES256-SHA384 (C024)", alpn: "h2", version: .tls12, suite: 0xC024,
            violations: ["h2_inadequate_security"]),
        Row(
            label: "http/1.1 with the same CBC suite: no HTTP/2 rule", alpn: "http/1.1", version: .tls12,
            suite: 0xC027, violations: []),
        Row(label: "no ALPN with the CBC suite", alpn: nil, version: .tls12, suite: 0xC027, violations: []),
        Row(
            label: "h2 with ECDHE-RSA-AES128-GCM-SHA256 (C02F)", alpn: "h2", version: .tls12, suite: 0xC02F,
            violations: []),
        Row(
            label: "h2 with ECDHE-ECDSA-AES256-GCM-SHA384 (C02C)", alpn: "h2", version: .tls12, suite: 0xC02C,
            violations: []),
        Row(label: "h2 over TLS 1.3", alpn: "h2", version: .tls13, suite: 0x1301, violations: []),
    ]

    @Test("the documented profile's suites, with and without h2", arguments: rows)
    func rule(_ row: Row) throws {
        // The documented cipher profile is the one whose client offers the CBC suites.
        let policy = try policy("", settings: settings(cipher: .documented))
        var observed = connection(version: row.version, suite: row.suite)
        observed.applicationProtocol = row.alpn
        let result = try verdict(policy, observed: observed)
        #expect(violationNames(result) == row.violations)
        if !row.violations.isEmpty {
            #expect(result.error == AppleError(nsurl: -1200, ssl: nil))
            #expect(result.violations.first?.allowedBy == nil, "no Info.plist key allows it")
        }
    }

    @Test("the suites RFC 9113 allows: ephemeral key exchange with an AEAD cipher")
    func allowedSuites() {
        #expect(CipherSuite(id: 0xC02F).isAllowedUnderHTTP2 && CipherSuite(id: 0xCCA8).isAllowedUnderHTTP2)
        #expect(CipherSuite(id: 0x009E).isAllowedUnderHTTP2, "DHE with AES-GCM is not on the block list")
        #expect(!CipherSuite(id: 0xC027).isAllowedUnderHTTP2 && !CipherSuite(id: 0xC013).isAllowedUnderHTTP2)
        #expect(!CipherSuite(id: 0x009C).isAllowedUnderHTTP2, "RSA key exchange is blocked even with GCM")
        #expect(CipherSuite(id: 0x1301).isAllowedUnderHTTP2)
    }
}
