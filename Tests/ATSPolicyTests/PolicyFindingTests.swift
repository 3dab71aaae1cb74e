import Testing
import TextFormats

@testable import ATSPolicy

/// Loads an ATS dictionary given as its inner XML.
private func load(_ inner: String, settings: PolicySettings = .default) throws -> TransportSecurityPolicy {
    let xml = "<?xml version=\"1.0\"?>\n<plist version=\"1.0\">\n<dict>\n\(inner)\n</dict>\n</plist>\n"
    return try PolicyLoader.load(bytes: Array(xml.utf8), file: "test.plist", settings: settings)
}

@Suite("Policy findings")
struct PolicyFindingTests {
    struct Row: CustomTestStringConvertible, Sendable {
        var label: String
        var xml: String
        var code: String
        var severity: Finding.Severity
        var path: String
        var settings: PolicySettings = .default
        var testDescription: String { label }
    }

    static let rows: [Row] = [
        Row(
            label: "string for a boolean", xml: "<key>NSAllowsArbitraryLoads</key><string>YES</string>",
            code: "wrong_type", severity: .error, path: "NSAllowsArbitraryLoads"),
        Row(
            label: "integer 2 for a boolean", xml: "<key>NSAllowsArbitraryLoads</key><integer>2</integer>",
            code: "number_for_boolean", severity: .warning, path: "NSAllowsArbitraryLoads"),
        Row(
            label: "InMedia", xml: "<key>NSAllowsArbitraryLoadsInMedia</key><true/>",
            code: "not_a_key", severity: .warning, path: "NSAllowsArbitraryLoadsInMedia"),
        Row(
            label: "misspelt global", xml: "<key>NSAllowArbitraryLoads</key><true/>",
            code: "unknown_key", severity: .warning, path: "NSAllowArbitraryLoads"),
        Row(
            label: "per-domain key at top level", xml: "<key>NSIncludesSubdomains</key><true/>",
            code: "misplaced_key", severity: .error, path: "NSIncludesSubdomains"),
        Row(
            label: "cancelled arbitrary loads",
            xml: "<key>NSAllowsArbitraryLoads</key><true/><key>NSAllowsArbitraryLoadsInWebContent</key><false/>",
            code: "arbitrary_loads_cancelled", severity: .warning, path: "NSAllowsArbitraryLoads"),
        Row(
            label: "exception domains as an array", xml: "<key>NSExceptionDomains</key><array/>",
            code: "wrong_type", severity: .error, path: "NSExceptionDomains"),
        Row(
            label: "entry not a dictionary",
            xml: "<key>NSExceptionDomains</key><dict><key>a.com</key><string></string></dict>",
            code: "entry_not_dictionary", severity: .error, path: #"NSExceptionDomains["a.com"]"#),
        Row(
            label: "wildcard key", xml: "<key>NSExceptionDomains</key><dict><key>*.a.com</key><dict/></dict>",
            code: "never_matches", severity: .error, path: #"NSExceptionDomains["*.a.com"]"#),
        Row(
            label: "port in key", xml: "<key>NSExceptionDomains</key><dict><key>a.com:443</key><dict/></dict>",
            code: "never_matches", severity: .error, path: #"NSExceptionDomains["a.com:443"]"#),
        Row(
            label: "URL as key", xml: "<key>NSExceptionDomains</key><dict><key>https://a.com/</key><dict/></dict>",
            code: "never_matches", severity: .error, path: #"NSExceptionDomains["https://a.com/"]"#),
        Row(
            label: "capital letters", xml: "<key>NSExceptionDomains</key><dict><key>A.com</key><dict/></dict>",
            code: "never_matches", severity: .error, path: #"NSExceptionDomains["A.com"]"#),
        Row(
            label: "trailing dot", xml: "<key>NSExceptionDomains</key><dict><key>a.com.</key><dict/></dict>",
            code: "trailing_dot", severity: .warning, path: #"NSExceptionDomains["a.com."]"#),
        Row(
            label: "whole TLD",
            xml:
                "<key>NSExceptionDomains</key><dict><key>com</key><dict><key>NSIncludesSubdomains</key><true/></dict></dict>",
            code: "whole_tld", severity: .warning, path: #"NSExceptionDomains["com"]"#),
        Row(
            label: "invalid CIDR", xml: "<key>NSExceptionDomains</key><dict><key>10.0.0.0/33</key><dict/></dict>",
            code: "invalid_cidr", severity: .error, path: #"NSExceptionDomains["10.0.0.0/33"]"#),
        Row(
            label: "zone in CIDR", xml: "<key>NSExceptionDomains</key><dict><key>fe80::%lo0/10</key><dict/></dict>",
            code: "invalid_cidr", severity: .error, path: #"NSExceptionDomains["fe80::%lo0/10"]"#),
        Row(
            label: "non-canonical IPv6 key",
            xml: "<key>NSExceptionDomains</key><dict><key>2001:0db8::1</key><dict/></dict>",
            code: "non_canonical_address", severity: .warning, path: #"NSExceptionDomains["2001:0db8::1"]"#),
        Row(
            label: "IP key before iOS 17",
            xml: "<key>NSExceptionDomains</key><dict><key>203.0.113.5</key><dict/></dict>",
            code: "not_on_profile", severity: .info, path: #"NSExceptionDomains["203.0.113.5"]"#,
            settings: PolicySettings(osProfile: .ios10)),
        Row(
            label: "invalid TLS version",
            xml:
                "<key>NSExceptionDomains</key><dict><key>a.com</key><dict><key>NSExceptionMinimumTLSVersion</key><string>TLSV1.3</string></dict></dict>",
            code: "invalid_tls_version", severity: .error,
            path: #"NSExceptionDomains["a.com"].NSExceptionMinimumTLSVersion"#),
        Row(
            label: "DTLS version",
            xml:
                "<key>NSExceptionDomains</key><dict><key>a.com</key><dict><key>NSExceptionMinimumTLSVersion</key><string>DTLSv1.2</string></dict></dict>",
            code: "dtls_version", severity: .warning, path: #"NSExceptionDomains["a.com"].NSExceptionMinimumTLSVersion"#
        ),
        Row(
            label: "TLS 1.0 on ios26",
            xml:
                "<key>NSExceptionDomains</key><dict><key>a.com</key><dict><key>NSExceptionMinimumTLSVersion</key><string>TLSv1.0</string></dict></dict>",
            code: "ignored_on_profile", severity: .warning,
            path: #"NSExceptionDomains["a.com"].NSExceptionMinimumTLSVersion"#,
            settings: PolicySettings(osProfile: .ios26)),
        Row(
            label: "legacy key ignored",
            xml:
                "<key>NSExceptionDomains</key><dict><key>a.com</key><dict><key>NSTemporaryExceptionAllowsInsecureHTTPLoads</key><true/></dict></dict>",
            code: "legacy_key", severity: .warning,
            path: #"NSExceptionDomains["a.com"].NSTemporaryExceptionAllowsInsecureHTTPLoads"#),
        Row(
            label: "obsolete CT key",
            xml:
                "<key>NSExceptionDomains</key><dict><key>a.com</key><dict><key>NSRequiresCertificateTransparency</key><true/></dict></dict>",
            code: "obsolete_key", severity: .warning,
            path: #"NSExceptionDomains["a.com"].NSRequiresCertificateTransparency"#),
        Row(
            label: "global key inside a domain",
            xml:
                "<key>NSExceptionDomains</key><dict><key>a.com</key><dict><key>NSAllowsArbitraryLoads</key><true/></dict></dict>",
            code: "misplaced_key", severity: .error, path: #"NSExceptionDomains["a.com"].NSAllowsArbitraryLoads"#),
        Row(
            label: "misspelt domain key",
            xml:
                "<key>NSExceptionDomains</key><dict><key>a.com</key><dict><key>NSIncludeSubdomains</key><true/></dict></dict>",
            code: "unknown_key", severity: .warning, path: #"NSExceptionDomains["a.com"].NSIncludeSubdomains"#),
        Row(
            label: "subdomains on an address",
            xml:
                "<key>NSExceptionDomains</key><dict><key>203.0.113.5</key><dict><key>NSIncludesSubdomains</key><true/></dict></dict>",
            code: "no_effect", severity: .warning, path: #"NSExceptionDomains["203.0.113.5"].NSIncludesSubdomains"#),
        Row(
            label: "duplicate key",
            xml: "<key>NSAllowsArbitraryLoads</key><true/><key>NSAllowsArbitraryLoads</key><false/>",
            code: "duplicate_key", severity: .warning, path: "NSAllowsArbitraryLoads"),
        Row(
            label: "pin array not an array",
            xml:
                "<key>NSPinnedDomains</key><dict><key>a.com</key><dict><key>NSPinnedLeafIdentities</key><string>x</string></dict></dict>",
            code: "pin_fails_closed", severity: .error, path: #"NSPinnedDomains["a.com"].NSPinnedLeafIdentities"#),
        Row(
            label: "bad base64 pin",
            xml:
                "<key>NSPinnedDomains</key><dict><key>a.com</key><dict><key>NSPinnedCAIdentities</key><array><dict><key>SPKI-SHA256-BASE64</key><string>not base64!</string></dict></array></dict></dict>",
            code: "malformed_pin", severity: .error,
            path: #"NSPinnedDomains["a.com"].NSPinnedCAIdentities[0].SPKI-SHA256-BASE64"#),
        Row(
            label: "pin entry without identities",
            xml:
                "<key>NSPinnedDomains</key><dict><key>a.com</key><dict><key>NSIncludesSubdomains</key><true/></dict></dict>",
            code: "pin_without_identities", severity: .warning, path: #"NSPinnedDomains["a.com"]"#),
        Row(
            label: "pin subdomains as a string",
            xml:
                "<key>NSPinnedDomains</key><dict><key>a.com</key><dict><key>NSIncludesSubdomains</key><string>YES</string><key>NSPinnedLeafIdentities</key><array/></dict></dict>",
            code: "wrong_type", severity: .error, path: #"NSPinnedDomains["a.com"].NSIncludesSubdomains"#),
        Row(
            label: "pin key with a trailing dot",
            xml:
                "<key>NSPinnedDomains</key><dict><key>a.com.</key><dict><key>NSPinnedLeafIdentities</key><array/></dict></dict>",
            code: "never_matches", severity: .error, path: #"NSPinnedDomains["a.com."]"#),
        Row(
            label: "wildcard pin key",
            xml:
                "<key>NSPinnedDomains</key><dict><key>*.a.com</key><dict><key>NSPinnedLeafIdentities</key><array/></dict></dict>",
            code: "never_matches", severity: .error, path: #"NSPinnedDomains["*.a.com"]"#),
        Row(
            label: "CIDR with host bits", xml: "<key>NSExceptionDomains</key><dict><key>10.1.0.0/8</key><dict/></dict>",
            code: "cidr_host_bits", severity: .warning, path: #"NSExceptionDomains["10.1.0.0/8"]"#),
        Row(
            label: "two keys for one range",
            xml: "<key>NSExceptionDomains</key><dict><key>10.0.0.0/8</key><dict/><key>10.1.0.0/8</key><dict/></dict>",
            code: "duplicate_address", severity: .warning, path: #"NSExceptionDomains["10.1.0.0/8"]"#),
        Row(
            label: "two keys for one address",
            xml:
                "<key>NSExceptionDomains</key><dict><key>2001:db8::1</key><dict/><key>2001:0db8::1</key><dict/></dict>",
            code: "duplicate_address", severity: .warning, path: #"NSExceptionDomains["2001:0db8::1"]"#),
        Row(
            label: "newline in a key", xml: "<key>NSExceptionDomains</key><dict><key>example.com\n</key><dict/></dict>",
            code: "never_matches", severity: .error, path: #"NSExceptionDomains["example.com\n"]"#),
        Row(
            label: "non-ASCII key", xml: "<key>NSExceptionDomains</key><dict><key>bücher.de</key><dict/></dict>",
            code: "never_matches", severity: .error, path: #"NSExceptionDomains["bücher.de"]"#),
        Row(
            label: "pins inside an exception",
            xml:
                "<key>NSExceptionDomains</key><dict><key>a.com</key><dict><key>NSPinnedLeafIdentities</key><array/></dict></dict>",
            code: "misplaced_key", severity: .error, path: #"NSExceptionDomains["a.com"].NSPinnedLeafIdentities"#),
        Row(
            label: "extra key in a pin identity",
            xml:
                "<key>NSPinnedDomains</key><dict><key>a.com</key><dict><key>NSPinnedLeafIdentities</key><array><dict><key>SPKI-SHA1-BASE64</key><string>x</string><key>SPKI-SHA256-BASE64</key><string>C5+lpZ7tcVwmwQIMcRtPbsQtWLABXhQzejna0wHFr8M=</string></dict></array></dict></dict>",
            code: "unknown_key", severity: .warning,
            path: #"NSPinnedDomains["a.com"].NSPinnedLeafIdentities[0].SPKI-SHA1-BASE64"#),
        Row(
            label: "pin keys differing in case",
            xml:
                "<key>NSPinnedDomains</key><dict><key>A.com</key><dict><key>NSPinnedLeafIdentities</key><array/></dict><key>a.com</key><dict><key>NSPinnedLeafIdentities</key><array/></dict></dict>",
            code: "duplicate_pin", severity: .warning, path: #"NSPinnedDomains["a.com"]"#),
        Row(
            label: "invented global key in a bare ATS dictionary",
            xml: "<key>NSAllowsArbitraryLoadsEverywhere</key><true/>",
            code: "unknown_key", severity: .warning, path: "NSAllowsArbitraryLoadsEverywhere"),
        Row(
            label: "NIAP value", xml: "<key>NSRequiresNIAPTLSPackageVersion</key><string>FCP_v3</string>",
            code: "invalid_value", severity: .error, path: "NSRequiresNIAPTLSPackageVersion",
            settings: PolicySettings(osProfile: .ios26)),
    ]

    @Test("each suspicious key gives one finding with its code, severity and path", arguments: rows)
    func finding(_ row: Row) throws {
        let policy = try load(row.xml, settings: row.settings)
        let match = policy.findings.first { $0.code == row.code && $0.path.description == row.path }
        let found = try #require(match, "findings were: \(policy.findings.map { "\($0.code) \($0.path)" })")
        #expect(found.severity == row.severity)
        #expect(!found.message.isEmpty)
    }

    @Test("a clean policy has no findings")
    func clean() throws {
        let policy = try load(
            """
            <key>NSAllowsArbitraryLoadsInWebContent</key><true/>
            <key>NSExceptionDomains</key>
            <dict>
                <key>example.com</key>
                <dict>
                    <key>NSIncludesSubdomains</key><true/>
                    <key>NSExceptionMinimumTLSVersion</key><string>TLSv1.1</string>
                </dict>
                <key>10.0.0.0/8</key>
                <dict><key>NSExceptionAllowsInsecureHTTPLoads</key><true/></dict>
            </dict>
            """)
        #expect(policy.findings.isEmpty)
    }

    @Test("a repeated key counts once, the last copy, everywhere")
    func lastCopyWins() throws {
        let policy = try load(
            """
            <key>NSExceptionDomains</key><dict><key>a.com</key><dict><key>NSExceptionAllowsInsecureHTTPLoads</key><true/></dict></dict>
            <key>NSExceptionDomains</key><array/>
            """)
        #expect(policy.exceptions.isEmpty)
        #expect(try policy.requirements(forHost: "a.com", scheme: .http).rule.kind == .default)
    }

    @Test("address keys: the canonically written one wins a collision, as Apple's text match would")
    func addressCollision() throws {
        for order in [["2001:db8::1", "2001:0db8::1"], ["2001:0db8::1", "2001:db8::1"]] {
            let entries = order.map { key in
                "<key>\(key)</key><dict>"
                    + (key == "2001:db8::1" ? "<key>NSExceptionAllowsInsecureHTTPLoads</key><true/>" : "") + "</dict>"
            }
            let policy = try load("<key>NSExceptionDomains</key><dict>" + entries.joined() + "</dict>")
            let requirements = try policy.requirements(forHost: "[2001:db8::1]", scheme: .http)
            #expect(requirements.rule.key == "2001:db8::1", "\(order)")
            #expect(requirements.cleartextAllowed)
            #expect(policy.exceptions.count == 1)
        }
    }

    @Test("pin entries whose keys differ only in case are both applied")
    func pinCaseUnion() throws {
        let policy = try load(
            """
            <key>NSPinnedDomains</key><dict>
            <key>Example.com</key><dict><key>NSPinnedLeafIdentities</key><array><dict><key>SPKI-SHA256-BASE64</key><string>C5+lpZ7tcVwmwQIMcRtPbsQtWLABXhQzejna0wHFr8M=</string></dict></array></dict>
            <key>example.com</key><dict><key>NSPinnedLeafIdentities</key><array><dict><key>SPKI-SHA256-BASE64</key><string>diGVwiVYbubAI3RW4hB9xU8e/CH2GnkuvVFZE8zmgzI=</string></dict></array></dict>
            </dict>
            """)
        let pins = try #require(try policy.requirements(forHost: "example.com").pins)
        #expect(pins.leafIdentities?.count == 2)
    }

    @Test("honoured legacy aliases: the list's order decides, not the file's")
    func legacyOrder() throws {
        let honor = PolicySettings(legacyKeys: .honor)
        for pair in [
            ("NSTemporaryExceptionMinimumTLSVersion", "NSThirdPartyExceptionMinimumTLSVersion"),
            ("NSThirdPartyExceptionMinimumTLSVersion", "NSTemporaryExceptionMinimumTLSVersion"),
        ] {
            let xml =
                "<key>NSExceptionDomains</key><dict><key>a.com</key><dict>"
                + "<key>\(pair.0)</key><string>\(pair.0.hasPrefix("NSTemporary") ? "TLSv1.0" : "TLSv1.1")</string>"
                + "<key>\(pair.1)</key><string>\(pair.1.hasPrefix("NSTemporary") ? "TLSv1.0" : "TLSv1.1")</string>"
                + "</dict></dict>"
            let policy = try load(xml, settings: honor)
            #expect(
                try policy.requirements(forHost: "a.com").minimumTLSVersion == .tls11,
                "NSThirdParty… comes first in the list")
        }
    }

    @Test("the summary's global rule does not depend on a probe host")
    func summaryWithOddKeys() throws {
        let policy = try load(
            "<key>NSAllowsArbitraryLoads</key><true/><key>NSExceptionDomains</key><dict><key>invalid</key><dict><key>NSIncludesSubdomains</key><true/></dict></dict>"
        )
        #expect(
            policy.summary.lines.contains { $0.hasPrefix("URLSession loads to hosts without an exception: ATS off") })
    }

    @Test("a plist on one line with 50,000 elements loads (column lookups are not quadratic)")
    func longLine() throws {
        let xml =
            "<plist version=\"1.0\"><dict><key>NSExceptionDomains</key><array>"
            + String(repeating: "<true/>", count: 50_000) + "</array></dict></plist>"
        let policy = try PolicyLoader.load(bytes: Array(xml.utf8), file: "long.plist")
        let finding = try #require(policy.findings.first)
        #expect(finding.location == TextFormats.SourceLocation(line: 1, column: 57))
    }

    @Test("findings carry the XML line of the value at fault")
    func lines() throws {
        let policy = try load(
            "<key>NSExceptionDomains</key>\n<dict>\n<key>a.com</key>\n<dict>\n<key>NSIncludesSubdomains</key>\n<string>YES</string>\n</dict>\n</dict>"
        )
        let finding = try #require(policy.findings.first)
        #expect(finding.location.line == 9)
    }

    @Test("an Info.plist without NSAppTransportSecurity gets the defaults and a note")
    func infoPlistWithoutATS() throws {
        let policy = try load("<key>CFBundleIdentifier</key><string>com.example</string>")
        #expect(policy.rootKind == .infoPlist)
        #expect(!policy.hasATSDictionary)
        #expect(policy.findings.map(\.code) == ["no_ats_dictionary"])
        #expect(try policy.requirements(forHost: "example.com").rule.kind == .default)
    }

    @Test("ATS keys at the top level of an Info.plist are named")
    func misplacedInInfoPlist() throws {
        let policy = try load(
            "<key>CFBundleIdentifier</key><string>com.example</string><key>NSAllowsArbitraryLoads</key><true/>")
        #expect(
            policy.findings.contains { $0.code == "misplaced_key" && $0.path.description == "NSAllowsArbitraryLoads" })
        #expect(try policy.requirements(forHost: "example.com", scheme: .http).cleartextAllowed == false)
    }

    @Test(
        "load errors name the file and what is wrong",
        arguments: [
            ("<plist version=\"1.0\"><array/></plist>", PolicyLoadError.Code.rootNotDictionary),
            (
                "<plist version=\"1.0\"><dict><key>NSAppTransportSecurity</key><array/></dict></plist>",
                .atsNotDictionary
            ),
            ("this is not a plist", .notAPropertyList),
            ("", .notAPropertyList),
        ])
    func loadErrors(_ contents: String, _ code: PolicyLoadError.Code) {
        do {
            _ = try PolicyLoader.load(bytes: Array(contents.utf8), file: "bad.plist")
            Issue.record("expected a load error")
        } catch {
            #expect(error.code == code)
            #expect(error.description.hasPrefix("bad.plist: "))
        }
    }
}
