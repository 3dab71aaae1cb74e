import ATSPolicy
import Testing

/// `NSExceptionDomains` host matching, cases Item 11–18 (Apple: NSExceptionDomains, NSIncludesSubdomains; Apple
/// open source: SecProtocolConfiguration.m), and the `NSIncludesSubdomains` depth (docs/ats-rules.md, "The
/// decisions": any depth for `NSExceptionDomains`, the nearest ancestor with the flag wins).
@Suite("Spec §7.11–18: NSExceptionDomains host matching")
struct SpecDomainMatchingTests: ATSSpecFixture {
    struct MatchRow: ATSSpecRow {
        let label: String
        let entries: String
        let host: String
        /// The `NSExceptionDomains` key that must govern the host, or nil when none may.
        let expectedKey: String?
    }

    private static func d(_ key: String, _ body: String = "") -> String { ATSSpec.domain(key, body) }
    private static let subs = ATSSpec.subdomainsYES
    private static let noSubs = ATSSpec.subdomainsNO

    static let exactOnly = d("example.com", ATSSpec.insecureYES)
    static let withSubdomains = d("example.com", subs + ATSSpec.insecureYES)
    static let shadowing =
        d("example.com", subs + ATSSpec.insecureYES) + d("sub.example.com", noSubs + ATSSpec.minimumTLS("TLSv1.3"))
    /// Apple's `testIncludesSubdomains` (Apple open source: SecProtocolConfigurationTest.m).
    static let appleUnitTest =
        d("example.com", subs) + d("subhostname.example.com", noSubs) + d("another.subhostname.example.com", noSubs)

    static let rows: [MatchRow] = [
        // Item 11: exact entry without subdomains.
        MatchRow(
            label: "11: exact key covers the host itself", entries: exactOnly, host: "example.com",
            expectedKey: "example.com"),
        MatchRow(
            label: "11: exact key without subdomains does not cover a.example.com", entries: exactOnly,
            host: "a.example.com", expectedKey: nil),
        MatchRow(
            label: "11: exact key does not cover a sibling", entries: exactOnly, host: "example.org", expectedKey: nil),
        // Item 12: with subdomains, any depth.
        MatchRow(
            label: "12: subdomains cover the domain itself", entries: withSubdomains, host: "example.com",
            expectedKey: "example.com"),
        MatchRow(
            label: "12: subdomains cover a.example.com", entries: withSubdomains, host: "a.example.com",
            expectedKey: "example.com"),
        MatchRow(
            label: "12: subdomains cover a.b.example.com (depth any)", entries: withSubdomains, host: "a.b.example.com",
            expectedKey: "example.com"),
        MatchRow(
            label: "12: label boundary: notexample.com is not a subdomain", entries: withSubdomains,
            host: "notexample.com", expectedKey: nil),
        MatchRow(
            label: "12: label boundary: xexample.com (the pre-61901 bug) is not a subdomain", entries: withSubdomains,
            host: "xexample.com", expectedKey: nil),
        MatchRow(
            label: "12: example.com.evil.net is not a subdomain", entries: withSubdomains, host: "example.com.evil.net",
            expectedKey: nil),
        MatchRow(
            label: "12: com.example (labels reversed) is not covered", entries: withSubdomains, host: "com.example",
            expectedKey: nil),
        // Item 13: shadowing.
        MatchRow(
            label: "13: sub.example.com uses its own entry", entries: shadowing, host: "sub.example.com",
            expectedKey: "sub.example.com"),
        MatchRow(
            label: "13: x.sub.example.com skips sub.example.com (no subdomains) and uses example.com",
            entries: shadowing, host: "x.sub.example.com", expectedKey: "example.com"),
        MatchRow(
            label: "13: y.x.sub.example.com uses example.com", entries: shadowing, host: "y.x.sub.example.com",
            expectedKey: "example.com"),
        MatchRow(
            label: "13: other.example.com uses example.com", entries: shadowing, host: "other.example.com",
            expectedKey: "example.com"),
        MatchRow(
            label: "§2.3 Apple unit test: test.another.subhostname.example.com → example.com", entries: appleUnitTest,
            host: "test.another.subhostname.example.com", expectedKey: "example.com"),
        MatchRow(
            label: "§2.3 Apple unit test: another.subhostname.example.com → itself", entries: appleUnitTest,
            host: "another.subhostname.example.com", expectedKey: "another.subhostname.example.com"),
        MatchRow(
            label: "§2.3 Apple unit test: x.subhostname.example.com → example.com", entries: appleUnitTest,
            host: "x.subhostname.example.com", expectedKey: "example.com"),
        // Nearest ancestor with the flag wins.
        MatchRow(
            label: "§2.3: nearest ancestor with subdomains wins",
            entries: d("example.com", subs) + d("b.example.com", subs), host: "a.b.example.com",
            expectedKey: "b.example.com"),
        MatchRow(
            label: "§2.3: nearest ancestor wins two labels down",
            entries: d("example.com", subs) + d("b.example.com", subs), host: "x.a.b.example.com",
            expectedKey: "b.example.com"),
        MatchRow(
            label: "§2.3: order in the file does not matter",
            entries: d("b.example.com", subs) + d("example.com", subs), host: "a.b.example.com",
            expectedKey: "b.example.com"),
        // Item 14: case.
        MatchRow(
            label: "14: host API.Example.COM matches key api.example.com", entries: d("api.example.com"),
            host: "API.Example.COM", expectedKey: "api.example.com"),
        MatchRow(
            label: "14: host API.Example.COM climbs to key example.com", entries: d("example.com", subs),
            host: "API.Example.COM", expectedKey: "example.com"),
        MatchRow(
            label: "14: key API.example.com never matches api.example.com", entries: d("API.example.com"),
            host: "api.example.com", expectedKey: nil),
        MatchRow(
            label: "14: key API.example.com never matches API.example.com", entries: d("API.example.com"),
            host: "API.example.com", expectedKey: nil),
        MatchRow(
            label: "14: key Example.com with subdomains never matches a.example.com", entries: d("Example.com", subs),
            host: "a.example.com", expectedKey: nil),
        // Item 15: trailing dots are significant.
        MatchRow(
            label: "15: host example.com. does not match key example.com", entries: d("example.com"),
            host: "example.com.", expectedKey: nil),
        MatchRow(
            label: "15: host example.com does not match key example.com.", entries: d("example.com."),
            host: "example.com", expectedKey: nil),
        MatchRow(
            label: "15: host example.com. matches key example.com.", entries: d("example.com."), host: "example.com.",
            expectedKey: "example.com."),
        MatchRow(
            label: "15: host a.example.com. does not climb to key example.com", entries: d("example.com", subs),
            host: "a.example.com.", expectedKey: nil),
        MatchRow(
            label: "15: host a.example.com. climbs to key example.com.", entries: d("example.com.", subs),
            host: "a.example.com.", expectedKey: "example.com."),
        // Item 16: ports and wildcards are literal text that never matches.
        MatchRow(
            label: "16: key example.com:443 never matches example.com",
            entries: d("example.com:443", ATSSpec.insecureYES), host: "example.com", expectedKey: nil),
        MatchRow(
            label: "16: key *.example.com never matches a.example.com",
            entries: d("*.example.com", ATSSpec.insecureYES), host: "a.example.com", expectedKey: nil),
        MatchRow(
            label: "16: key *.example.com never matches example.com", entries: d("*.example.com", subs),
            host: "example.com", expectedKey: nil),
        MatchRow(
            label: "16: key *.example.com with subdomains never matches a.b.example.com",
            entries: d("*.example.com", subs), host: "a.b.example.com", expectedKey: nil),
        // Item 17: a TLD key with subdomains.
        MatchRow(
            label: "17: key com with subdomains matches anything.com", entries: d("com", subs), host: "anything.com",
            expectedKey: "com"),
        MatchRow(
            label: "17: key com with subdomains matches a.b.c.com", entries: d("com", subs), host: "a.b.c.com",
            expectedKey: "com"),
        MatchRow(
            label: "17: key com with subdomains does not match example.org", entries: d("com", subs),
            host: "example.org", expectedKey: nil),
        MatchRow(
            label: "17: key com without subdomains does not match anything.com", entries: d("com"),
            host: "anything.com", expectedKey: nil),
        // Item 18: exact beats parent.
        MatchRow(
            label: "18: exact a.example.com (subdomains NO) beats parent example.com (subdomains YES)",
            entries: d("example.com", subs + ATSSpec.insecureYES) + d("a.example.com", noSubs + ATSSpec.insecureNO),
            host: "a.example.com", expectedKey: "a.example.com"),
        MatchRow(
            label: "18: exact entry wins whatever its subdomains flag (YES)",
            entries: d("example.com", subs) + d("a.example.com", subs), host: "a.example.com",
            expectedKey: "a.example.com"),
    ]

    @Test("Which NSExceptionDomains entry governs a host", arguments: rows)
    func match(row: MatchRow) throws {
        // NSAllowsArbitraryLoads makes "no entry matched" observable as well.
        let policy = try policy(ATSSpec.arbitraryLoadsYES + "<key>NSExceptionDomains</key><dict>\(row.entries)</dict>")
        let requirements = try policy.requirements(forHost: row.host)
        if let key = row.expectedKey {
            #expect(requirements.rule.kind == .exception)
            #expect(requirements.rule.key == key)
            #expect(requirements.exception?.key == key)
        } else {
            #expect(requirements.rule.kind == .arbitraryLoads)
            #expect(requirements.exception == nil)
        }
    }

    // MARK: - NSIncludesSubdomains depth (docs/ats-rules.md, "The decisions": any depth for NSExceptionDomains)

    @Test("NSIncludesSubdomains reaches any depth for exceptions", arguments: 1...8)
    func subdomainDepth(extraLabels: Int) throws {
        let host = (0..<extraLabels).map { "l\($0)" }.joined(separator: ".") + ".example.com"
        let policy = try policy(ATSSpec.exceptionDomains(Self.withSubdomains))
        let requirements = try policy.requirements(forHost: host, scheme: .http)
        #expect(requirements.rule.key == "example.com")
        #expect(try cleartextAllowed(policy, host: host))
    }

    @Test("Without NSIncludesSubdomains no depth is covered", arguments: 1...3)
    func noSubdomainsNoDepth(extraLabels: Int) throws {
        let host = (0..<extraLabels).map { "l\($0)" }.joined(separator: ".") + ".example.com"
        let policy = try policy(ATSSpec.exceptionDomains(Self.exactOnly))
        #expect(try cleartextAllowed(policy, host: host) == false)
    }

    // MARK: - The matched entry's settings are what the host gets

    @Test("Item 13: the shadowing entries' settings reach the right hosts")
    func shadowingSettings() throws {
        let policy = try policy(ATSSpec.exceptionDomains(Self.shadowing))
        let sub = try policy.requirements(forHost: "sub.example.com")
        #expect(sub.cleartextAllowed == false)
        #expect(sub.minimumTLSVersion == .tls13)
        let deeper = try policy.requirements(forHost: "x.sub.example.com")
        #expect(deeper.cleartextAllowed)
        #expect(deeper.minimumTLSVersion == .tls12)
        #expect(try cleartextAllowed(policy, host: "sub.example.com") == false)
        #expect(try cleartextAllowed(policy, host: "x.sub.example.com"))
        #expect(
            violationNames(
                try verdict(policy, host: "sub.example.com", observed: tls12(0xC02F, host: "sub.example.com"))) == [
                    "tls_version"
                ])
        #expect(
            try verdict(policy, host: "x.sub.example.com", observed: tls12(0xC02F, host: "x.sub.example.com"))
                .isCompliant)
    }

    @Test("Item 18: the exact entry's insecure=NO blocks http:// although the parent allows it")
    func exactBeatsParentSettings() throws {
        let policy = try policy(
            ATSSpec.exceptionDomains(
                Self.d("example.com", Self.subs + ATSSpec.insecureYES), Self.d("a.example.com", Self.noSubs)))
        #expect(try cleartextAllowed(policy, host: "a.example.com") == false)
        #expect(try cleartextAllowed(policy, host: "b.example.com"))
    }

    @Test("Item 14: an upper-case host gets the lowercase entry's settings")
    func caseInsensitiveHost() throws {
        let policy = try policy(ATSSpec.exceptionDomains(Self.d("api.example.com", ATSSpec.insecureYES)))
        #expect(try cleartextAllowed(policy, host: "API.Example.COM"))
        let upperKey = try self.policy(ATSSpec.exceptionDomains(Self.d("API.example.com", ATSSpec.insecureYES)))
        #expect(try cleartextAllowed(upperKey, host: "API.example.com") == false)
    }
}
