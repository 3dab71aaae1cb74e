import ATSPolicy
import Testing
import TrafficReport

@Suite("NSIncludesSubdomains only where it is the honest summary")
struct SubdomainFoldingTests {
    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        /// host → the TLS version its server negotiated (ECDHE suite), or "rsa" for TLS 1.2 with RSA key exchange, or "tls13".
        var hosts: [(String, String)]
        /// The suggested entries as "domain: summary".
        var entries: [String]
        /// The domains refused, when the row is about a refusal.
        var refused: [String] = []
        var testDescription: String { name }
    }

    static func line(_ host: String, _ kind: String) -> String {
        switch kind {
        case "rsa": logLine(host, version: "TLSv1.2", cipher: rsaGCM)
        case "tls13": logLine(host, version: "TLSv1.3", cipher: tls13)
        case "http": logLine(host, scheme: "http")
        default: logLine(host, version: kind, cipher: ecdheCBC)
        }
    }

    static let subdomainsFS = "NSIncludesSubdomains = YES, NSExceptionRequiresForwardSecrecy = NO"

    static let rows: [Row] = [
        Row(
            name: "three subdomains needing the same entry fold at their nearest common parent",
            hosts: [("a.cdn.example.com", "rsa"), ("b.cdn.example.com", "rsa"), ("c.cdn.example.com", "rsa")],
            entries: ["cdn.example.com: \(subdomainsFS)"]),
        Row(
            name: "one subdomain needing less keeps the others exact",
            hosts: [("a.cdn.example.com", "rsa"), ("b.cdn.example.com", "rsa"), ("c.cdn.example.com", "tls13")],
            entries: [
                "a.cdn.example.com: NSExceptionRequiresForwardSecrecy = NO",
                "b.cdn.example.com: NSExceptionRequiresForwardSecrecy = NO",
            ],
            refused: ["cdn.example.com"]),
        Row(
            name: "one needing something else (not a superset) blocks the fold too",
            hosts: [("a.cdn.example.com", "rsa"), ("b.cdn.example.com", "rsa"), ("c.cdn.example.com", "TLSv1.1")],
            entries: [
                "a.cdn.example.com: NSExceptionRequiresForwardSecrecy = NO",
                "b.cdn.example.com: NSExceptionRequiresForwardSecrecy = NO",
                "c.cdn.example.com: NSExceptionMinimumTLSVersion = TLSv1.1",
            ],
            refused: ["cdn.example.com"]),
        Row(
            name: "one needing more keeps its own exact entry beside the fold",
            hosts: [
                ("a.cdn.example.com", "TLSv1.1"), ("b.cdn.example.com", "TLSv1.1"), ("c.cdn.example.com", "TLSv1.0"),
            ],
            entries: [
                "c.cdn.example.com: NSExceptionMinimumTLSVersion = TLSv1.0",
                "cdn.example.com: NSIncludesSubdomains = YES, NSExceptionMinimumTLSVersion = TLSv1.1",
            ]),
        Row(
            name: "a single host is never folded",
            hosts: [("a.cdn.example.com", "rsa"), ("api.example.com", "tls13")],
            entries: ["a.cdn.example.com: NSExceptionRequiresForwardSecrecy = NO"]),
        Row(
            name: "the parent itself seen with the same needs is part of the fold",
            hosts: [("example.com", "rsa"), ("a.example.com", "rsa"), ("b.example.com", "rsa")],
            entries: ["example.com: \(subdomainsFS)"]),
        Row(
            name: "the parent itself needing more cannot carry the subdomains' entry",
            hosts: [("example.com", "http"), ("a.example.com", "rsa"), ("b.example.com", "rsa")],
            entries: [
                "a.example.com: NSExceptionRequiresForwardSecrecy = NO",
                "b.example.com: NSExceptionRequiresForwardSecrecy = NO",
                "example.com: NSExceptionAllowsInsecureHTTPLoads = YES",
            ],
            refused: ["example.com"]),
        Row(
            name: "the fold covering the most hosts wins over a deeper one covering fewer",
            hosts: [("a.img.cdn.example.com", "rsa"), ("b.img.cdn.example.com", "rsa"), ("c.cdn.example.com", "rsa")],
            entries: ["cdn.example.com: \(subdomainsFS)"]),
        Row(
            name: "two-label country suffixes are not folded",
            hosts: [("shop.co.uk", "rsa"), ("news.co.uk", "rsa")],
            entries: [
                "news.co.uk: NSExceptionRequiresForwardSecrecy = NO",
                "shop.co.uk: NSExceptionRequiresForwardSecrecy = NO",
            ],
            refused: ["co.uk"]),
        Row(
            name: "under a country suffix, the owner's domain folds",
            hosts: [("a.shop.co.uk", "rsa"), ("b.shop.co.uk", "rsa")],
            entries: ["shop.co.uk: \(subdomainsFS)"]),
        Row(
            name: "shared hosting zones are not folded",
            hosts: [("d111.cloudfront.net", "rsa"), ("d222.cloudfront.net", "rsa")],
            entries: [
                "d111.cloudfront.net: NSExceptionRequiresForwardSecrecy = NO",
                "d222.cloudfront.net: NSExceptionRequiresForwardSecrecy = NO",
            ],
            refused: ["cloudfront.net"]),
        Row(
            name: "no parent is a bare top-level domain",
            hosts: [("alpha.com", "rsa"), ("beta.com", "rsa")],
            entries: [
                "alpha.com: NSExceptionRequiresForwardSecrecy = NO", "beta.com: NSExceptionRequiresForwardSecrecy = NO",
            ]),
    ]

    @Test("folds", arguments: rows)
    func folds(_ row: Row) {
        let report = report(row.hosts.map { Self.line($0.0, $0.1) })
        #expect(report.entrySummaries == row.entries)
        #expect(report.refusedFolds.map(\.domain) == row.refused)
    }

    @Test("the fold's reason names the hosts and those kept apart")
    func reason() throws {
        let report = report(Self.rows[3].hosts.map { Self.line($0.0, $0.1) })
        let fold = try #require(report.folds.first)
        #expect(
            fold.reason == "2 hosts under cdn.example.com (a.cdn.example.com, b.cdn.example.com) need exactly "
                + "NSExceptionMinimumTLSVersion = TLSv1.1, and no host seen under it needs less; "
                + "c.cdn.example.com needs more and keeps its own entry")
        #expect(report.entryKey[.name("a.cdn.example.com")] == "cdn.example.com")
        #expect(report.entryKey[.name("c.cdn.example.com")] == "c.cdn.example.com")
    }
}
