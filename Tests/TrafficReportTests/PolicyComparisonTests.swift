import ATSPolicy
import Testing
import TrafficReport

@Suite("Unused and missing keys against a current policy")
struct PolicyComparisonTests {
    static func exception(_ key: String, _ inner: String) -> String { "<key>\(key)</key><dict>\(inner)</dict>" }
    static let floor10 = "<key>NSExceptionMinimumTLSVersion</key><string>TLSv1.0</string>"
    static let noFS = "<key>NSExceptionRequiresForwardSecrecy</key><false/>"
    static let http = "<key>NSExceptionAllowsInsecureHTTPLoads</key><true/>"
    static let subdomains = "<key>NSIncludesSubdomains</key><true/>"

    func compare(_ lines: [String], _ inner: String) throws -> TrafficReport {
        report(lines, policy: try policy(inner))
    }

    @Test("NSAllowsArbitraryLoads: replace when hosts relied on it, delete when none did")
    func arbitraryLoads() throws {
        let relied = try compare(
            [logLine("legacy.example.com", version: "TLSv1.0", cipher: ecdheCBC, rule: "arbitrary_loads")],
            "<key>NSAllowsArbitraryLoads</key><true/>")
        #expect(relied.unused?.map(\.advice) == [.replace])
        #expect(
            relied.unused?.first?.reason
                == "legacy.example.com rely on it; the suggested per-host entries let them through without turning ATS off"
        )
        #expect(relied.missing == [])
        let idle = try compare(
            [logLine("api.example.com", version: "TLSv1.3", cipher: tls13, rule: "arbitrary_loads")],
            "<key>NSAllowsArbitraryLoads</key><true/>")
        #expect(idle.unused?.map(\.advice) == [.delete])
    }

    @Test("NSAllowsArbitraryLoads cancelled by InWebContent has no effect; both are unused for URLSession traffic")
    func cancelled() throws {
        let report = try compare(
            [logLine("api.example.com", version: "TLSv1.3", cipher: tls13)],
            "<key>NSAllowsArbitraryLoads</key><true/><key>NSAllowsArbitraryLoadsInWebContent</key><true/>")
        #expect(report.unused?.map(\.path) == ["NSAllowsArbitraryLoads", "NSAllowsArbitraryLoadsInWebContent"])
        #expect(report.unused?.first?.reason.contains("has no effect") == true)
    }

    @Test("per-entry keys: deleted when unneeded, the floor raised when set too low, subdomains when none were seen")
    func entryKeys() throws {
        let report = try compare(
            [
                logLine("pay.example.net", version: "TLSv1.1", cipher: rsaGCM, rule: "exception"),
                logLine("cdn.example.com", version: "TLSv1.2", cipher: rsaGCM, rule: "exception"),
            ],
            "<key>NSExceptionDomains</key><dict>"
                + Self.exception("pay.example.net", Self.floor10 + Self.noFS + Self.http)
                + Self.exception("cdn.example.com", Self.subdomains + Self.noFS)
                + Self.exception("gone.example.com", Self.http)
                + Self.exception("strict.example.com", "")
                + "</dict>")
        let unused = try #require(report.unused)
        #expect(
            unused.map(\.path) == [
                "NSExceptionDomains › pay.example.net › NSExceptionMinimumTLSVersion",
                "NSExceptionDomains › pay.example.net › NSExceptionAllowsInsecureHTTPLoads",
                "NSExceptionDomains › cdn.example.com › NSIncludesSubdomains",
                "NSExceptionDomains › gone.example.com",
            ])
        #expect(unused.map(\.advice) == [.raise, .delete, .delete, .delete])
        #expect(unused[0].replacement == "TLSv1.1")
        #expect(report.missing == [])
    }

    @Test("an entry matching only local hosts is unused: they are exempt without it")
    func localOnly() throws {
        let report = try compare(
            [logLine("localhost", scheme: "http", rule: "exception")],
            "<key>NSExceptionDomains</key><dict>" + Self.exception("localhost", Self.http) + "</dict>")
        #expect(report.unused?.map(\.path) == ["NSExceptionDomains › localhost"])
        #expect(report.entries.isEmpty)
    }

    @Test("an entry matching a host that was never reached is not judged")
    func unreachedNotJudged() throws {
        let report = try compare(
            [logLine("down.example.com", action: "failed", rule: "exception")],
            "<key>NSExceptionDomains</key><dict>" + Self.exception("down.example.com", Self.http) + "</dict>")
        #expect(report.unused == [])
    }

    @Test("missing keys name the suggested entry; a parent's entry that falls short is named in the reason")
    func missing() throws {
        let report = try compare(
            [
                logLine(
                    "s9.cdn.example.com", action: "blocked", version: "TLSv1.0", cipher: rsaGCM,
                    violations: ["tls_version"], rule: "exception"),
                logLine("feed.example.org", scheme: "http", action: "blocked", violations: ["cleartext"]),
            ],
            "<key>NSExceptionDomains</key><dict>"
                + Self.exception(
                    "cdn.example.com",
                    Self.subdomains + "<key>NSExceptionMinimumTLSVersion</key><string>TLSv1.1</string>")
                + "</dict>")
        let missing = try #require(report.missing)
        #expect(
            missing.map(\.path) == [
                "NSExceptionDomains › feed.example.org › NSExceptionAllowsInsecureHTTPLoads",
                "NSExceptionDomains › s9.cdn.example.com › NSExceptionMinimumTLSVersion",
                "NSExceptionDomains › s9.cdn.example.com › NSExceptionRequiresForwardSecrecy",
            ])
        #expect(missing.map(\.value) == ["true", "TLSv1.0", "false"])
        #expect(
            missing[1].reason
                == "s9.cdn.example.com negotiated TLS 1.0 (1 connection); its entry \"cdn.example.com\" sets the floor at TLSv1.1"
        )
    }
}
