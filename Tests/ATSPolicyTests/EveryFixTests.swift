import Foundation
import Testing

@testable import ATSPolicy

/// One row per fix `check` can suggest (each `fix:` in Policy/*.swift, and each variant of the
/// computed ones), with the fix applied as its text says: the fixed policy must load, on XML and its
/// binary twin, with fewer errors and warnings, no more notes, and without the finding that suggested it. A fix that leaves the
/// policy invalid or contradictory (a rename carrying an invalid value, a rename onto a key already
/// present) fails here.
@Suite("Every suggested fix, applied")
struct EveryFixTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var label: String
        var code: String
        /// A phrase of the fix text.
        var fix: String
        /// The root dictionary's inner XML, before and after the fix.
        var xml: String
        var fixed: String
        var settings: PolicySettings = .default
        var testDescription: String { label }
    }

    static func domains(_ inner: String) -> String { "<key>NSExceptionDomains</key><dict>\(inner)</dict>" }
    static func domain(_ key: String, _ inner: String = "") -> String {
        domains("<key>\(key)</key><dict>\(inner)</dict>")
    }
    static let insecureYES = "<key>NSExceptionAllowsInsecureHTTPLoads</key><true/>"
    static func pins(_ inner: String) -> String { "<key>NSPinnedDomains</key><dict>\(inner)</dict>" }
    static let spki =
        "<array><dict><key>SPKI-SHA256-BASE64</key><string>C5+lpZ7tcVwmwQIMcRtPbsQtWLABXhQzejna0wHFr8M=</string></dict></array>"
    static func pin(_ key: String, _ inner: String = "<key>NSPinnedLeafIdentities</key>" + spki) -> String {
        pins("<key>\(key)</key><dict>\(inner)</dict>")
    }
    static let insecure = "<key>NSExceptionAllowsInsecureHTTPLoads</key><true/>"
    static let app = "<key>CFBundleIdentifier</key><string>com.example.app</string>"
    static func ats(_ inner: String) -> String { app + "<key>NSAppTransportSecurity</key><dict>\(inner)</dict>" }

    static let rows: [Row] = [
        // PolicyParser.swift
        Row(
            label: "global key at the Info.plist root", code: "misplaced_key",
            fix: "move it into the NSAppTransportSecurity",
            xml: ats("") + "<key>NSAllowsArbitraryLoads</key><true/>",
            fixed: ats("<key>NSAllowsArbitraryLoads</key><true/>")),
        Row(
            label: "misspelt NSAppTransportSecurity", code: "unknown_key", fix: "rename it to NSAppTransportSecurity",
            xml: app + "<key>NSAppTransportSecurty</key><dict/>",
            fixed: app + "<key>NSAppTransportSecurity</key><dict/>"),
        Row(
            label: "two NSAppTransportSecurity blocks", code: "duplicate_key", fix: "merge the keys you need",
            xml: ats(domain("a.com", insecure)) + "<key>NSAppTransportSecurity</key><dict/>",
            fixed: ats(domain("a.com", insecure))),
        Row(
            label: "InMedia", code: "not_a_key", fix: "rename it to NSAllowsArbitraryLoadsForMedia",
            xml: "<key>NSAllowsArbitraryLoadsInMedia</key><true/>",
            fixed: "<key>NSAllowsArbitraryLoadsForMedia</key><true/>"),
        Row(
            label: "number for a boolean", code: "number_for_boolean", fix: "write <true/>",
            xml: "<key>NSAllowsArbitraryLoadsInWebContent</key><integer>1</integer>",
            fixed: "<key>NSAllowsArbitraryLoadsInWebContent</key><true/>"),
        Row(
            label: "string for a boolean", code: "wrong_type", fix: "write <true/> instead of <string>YES</string>",
            xml: "<key>NSAllowsArbitraryLoads</key><string>YES</string>",
            fixed: "<key>NSAllowsArbitraryLoads</key><true/>"),
        Row(
            label: "other value for a boolean", code: "wrong_type", fix: "write <true/> or <false/>",
            xml: "<key>NSAllowsLocalNetworking</key><string>on</string>",
            fixed: "<key>NSAllowsLocalNetworking</key><true/>"),
        Row(
            label: "arbitrary loads cancelled", code: "arbitrary_loads_cancelled",
            fix: "remove NSAllowsArbitraryLoadsInWebContent",
            xml: "<key>NSAllowsArbitraryLoads</key><true/><key>NSAllowsArbitraryLoadsInWebContent</key><true/>",
            fixed: "<key>NSAllowsArbitraryLoads</key><true/>"),
        Row(
            label: "NIAP value of the wrong type", code: "wrong_type", fix: "write <string>FCP_v2.1</string>",
            xml: "<key>NSRequiresNIAPTLSPackageVersion</key><true/>",
            fixed: "<key>NSRequiresNIAPTLSPackageVersion</key><string>FCP_v2.1</string>",
            settings: PolicySettings(osProfile: .ios26)),
        Row(
            label: "domain key at the ATS top level", code: "misplaced_key",
            fix: "move it into an NSExceptionDomains entry",
            xml: "<key>NSExceptionAllowsInsecureHTTPLoads</key><true/>" + domain("a.com"),
            fixed: domain("a.com", insecure)),
        Row(
            label: "misspelt global key", code: "unknown_key", fix: "did you mean NSAllowsArbitraryLoads?",
            xml: "<key>NSAllowArbitraryLoads</key><true/>", fixed: "<key>NSAllowsArbitraryLoads</key><true/>"),
        Row(
            label: "display name of a global key", code: "display_name", fix: "rename it to NSAllowsLocalNetworking",
            xml: "<key>Allow Local Networking</key><true/>", fixed: "<key>NSAllowsLocalNetworking</key><true/>"),
        Row(
            label: "display name of NSAppTransportSecurity", code: "display_name",
            fix: "rename it to NSAppTransportSecurity",
            xml: app + "<key>App Transport Security Settings</key><dict/>", fixed: ats("")),
        Row(
            label: "display name of a domain key at the top level", code: "display_name",
            fix: "rename it to NSIncludesSubdomains and move it into an NSExceptionDomains entry",
            xml: "<key>Include Subdomains</key><true/>" + domain("a.com", insecure),
            fixed: domain("a.com", insecure + "<key>NSIncludesSubdomains</key><true/>")),
        Row(
            label: "display name of a global key at the Info.plist root", code: "display_name",
            fix:
                "rename it to NSAllowsArbitraryLoadsInWebContent and move it into the NSAppTransportSecurity dictionary",
            xml: ats("") + "<key>Allow Arbitrary Loads in Web Content</key><true/>",
            fixed: ats("<key>NSAllowsArbitraryLoadsInWebContent</key><true/>")),
        Row(
            label: "display-named block next to the real one", code: "display_name", fix: "merge what you need from it",
            xml: ats(domain("a.com", insecure)) + "<key>App Transport Security Settings</key><dict/>",
            fixed: ats(domain("a.com", insecure))),
        Row(
            label: "display name of a global key inside a domain", code: "display_name",
            fix: "rename it to NSAllowsLocalNetworking and move it to the top level of NSAppTransportSecurity",
            xml: domain("a.com", insecure + "<key>Allows Local Networking</key><true/>"),
            fixed: "<key>NSAllowsLocalNetworking</key><true/>" + domain("a.com", insecure)),
        Row(
            label: "duplicate key", code: "duplicate_key", fix: "remove all but one",
            xml: "<key>NSAllowsLocalNetworking</key><false/><key>NSAllowsLocalNetworking</key><true/>",
            fixed: "<key>NSAllowsLocalNetworking</key><true/>"),

        // ExceptionDomainParser.swift
        Row(
            label: "NSExceptionDomains not a dictionary", code: "wrong_type", fix: "make it a <dict>",
            xml: "<key>NSExceptionDomains</key><array><string>a.com</string></array>", fixed: domain("a.com", insecure)),
        Row(
            label: "entry not a dictionary", code: "entry_not_dictionary", fix: "make it a <dict>",
            xml: domains("<key>a.com</key><true/>"), fixed: domain("a.com", insecure)),
        Row(
            label: "domain key among the hosts", code: "misplaced_key", fix: "move it into the dictionary of \"a.com\"",
            xml: domains("<key>a.com</key><dict/>" + insecure), fixed: domain("a.com", insecure)),
        Row(
            label: "misspelt domain key among the hosts, no neighbour", code: "misplaced_key",
            fix: "move it into a host's dictionary", xml: domains("<key>NSIncludeSubdomains</key><true/>"),
            fixed: domain("a.com", "<key>NSIncludesSubdomains</key><true/>")),
        Row(
            label: "global key among the hosts", code: "misplaced_key",
            fix: "move it up into the NSAppTransportSecurity",
            xml: domains("<key>a.com</key><dict/><key>NSAllowsLocalNetworking</key><true/>"),
            fixed: "<key>NSAllowsLocalNetworking</key><true/>" + domain("a.com")),
        Row(
            label: "pin identities among the hosts", code: "misplaced_key",
            fix: "move it into NSPinnedDomains[\"a.com\"]",
            xml: domains("<key>a.com</key><dict>\(insecure)</dict><key>NSPinnedLeafIdentities</key>\(spki)"),
            fixed: domain("a.com", insecure) + pin("a.com")),
        Row(
            label: "CIDR with host bits", code: "cidr_host_bits", fix: "write 10.0.0.0/8",
            xml: domain("10.1.0.0/8"), fixed: domain("10.0.0.0/8")),
        Row(
            // Allowing insecure loads keeps the link-local fe80::1's local exemption (local_host_listed otherwise).
            label: "address with a zone", code: "never_matches", fix: "write fe80::1 without the zone",
            xml: domain("fe80::1%en0", insecureYES), fixed: domain("fe80::1", insecureYES)),
        Row(
            label: "non-canonical address", code: "non_canonical_address", fix: "write 2001:db8::1",
            xml: domain("2001:0db8::1"), fixed: domain("2001:db8::1")),
        Row(
            label: "two keys for one range", code: "duplicate_address", fix: "keep one entry",
            xml: domains("<key>10.0.0.0/8</key><dict/><key>10.1.0.0/8</key><dict/>"), fixed: domain("10.0.0.0/8")),
        Row(
            label: "empty key", code: "never_matches", fix: "write the host name", xml: domain(""),
            fixed: domain("a.com")),
        Row(
            label: "URL key", code: "never_matches", fix: "write a.com", xml: domain("https://a.com/x"),
            fixed: domain("a.com")),
        Row(
            label: "wildcard key", code: "never_matches", fix: "write a.com with NSIncludesSubdomains = YES",
            xml: domain("*.a.com"), fixed: domain("a.com", "<key>NSIncludesSubdomains</key><true/>")),
        Row(
            label: "bracketed IPv6 key", code: "never_matches", fix: "write 2001:db8::1",
            xml: domain("[2001:db8::1]"), fixed: domain("2001:db8::1")),
        Row(
            label: "key with a port", code: "never_matches", fix: "write a.com", xml: domain("a.com:8443"),
            fixed: domain("a.com")),
        Row(
            label: "key with a leading dot", code: "never_matches", fix: "write a.com with NSIncludesSubdomains = YES",
            xml: domain(".a.com"), fixed: domain("a.com", "<key>NSIncludesSubdomains</key><true/>")),
        Row(
            label: "key with a space", code: "never_matches", fix: "write a.com", xml: domain("a.com "),
            fixed: domain("a.com")),
        Row(
            label: "non-ASCII key", code: "never_matches", fix: "punycode", xml: domain("bücher.de"),
            fixed: domain("xn--bcher-kva.de")),
        Row(
            label: "capital letters", code: "never_matches", fix: "write api.a.com", xml: domain("API.a.com"),
            fixed: domain("api.a.com")),
        Row(
            label: "trailing dot", code: "trailing_dot", fix: "write a.com", xml: domain("a.com."),
            fixed: domain("a.com")),
        Row(
            label: "whole TLD", code: "whole_tld", fix: "name the domains you need",
            xml: domain("com", "<key>NSIncludesSubdomains</key><true/>"),
            fixed: domain("a.com", "<key>NSIncludesSubdomains</key><true/>")),
        Row(
            label: "localhost listed without insecure loads", code: "local_host_listed", fix: "or remove the entry",
            xml: domain("localhost", "<key>NSIncludesSubdomains</key><true/>")
                + "<key>NSAllowsArbitraryLoadsInWebContent</key><true/>",
            fixed: "<key>NSAllowsArbitraryLoadsInWebContent</key><true/>"),
        Row(
            label: "legacy key", code: "legacy_key", fix: "rename it to NSExceptionAllowsInsecureHTTPLoads",
            xml: domain("a.com", "<key>NSThirdPartyExceptionAllowsInsecureHTTPLoads</key><true/>"),
            fixed: domain("a.com", insecure)),
        Row(
            label: "legacy key with an invalid TLS version", code: "legacy_key",
            fix: "rename it to NSExceptionMinimumTLSVersion and write <string>TLSv1.0</string>",
            xml: domain("a.com", "<key>NSTemporaryExceptionMinimumTLSVersion</key><string>1.0</string>"),
            fixed: domain("a.com", "<key>NSExceptionMinimumTLSVersion</key><string>TLSv1.0</string>")),
        Row(
            label: "legacy key next to its NSException key", code: "legacy_key",
            fix:
                "remove NSThirdPartyExceptionAllowsInsecureHTTPLoads (NSExceptionAllowsInsecureHTTPLoads is already set here)",
            xml: domain("a.com", insecure + "<key>NSThirdPartyExceptionAllowsInsecureHTTPLoads</key><true/>"),
            fixed: domain("a.com", insecure)),
        Row(
            label: "first- and third-party keys contradict", code: "contradictory_keys",
            fix: "remove NSThirdPartyExceptionAllowsInsecureHTTPLoads; if NO is what the host needs",
            xml: domain("a.com", insecure + "<key>NSThirdPartyExceptionAllowsInsecureHTTPLoads</key><false/>"),
            fixed: domain("a.com", insecure)),
        Row(
            label: "two honoured legacy keys for one setting", code: "legacy_key",
            fix: "remove both and write NSExceptionMinimumTLSVersion",
            xml: domain(
                "a.com",
                "<key>NSThirdPartyExceptionMinimumTLSVersion</key><string>TLSv1.1</string>"
                    + "<key>NSTemporaryExceptionMinimumTLSVersion</key><string>TLSv1.0</string>"),
            fixed: domain("a.com", "<key>NSExceptionMinimumTLSVersion</key><string>TLSv1.1</string>"),
            settings: PolicySettings(legacyKeys: .honor)),
        Row(
            label: "empty entry under arbitrary loads", code: "stricter_than_unlisted", fix: "remove the entry",
            xml: "<key>NSAllowsArbitraryLoads</key><true/>" + domain("a.com"),
            fixed: "<key>NSAllowsArbitraryLoads</key><true/>"),
        Row(
            label: "entry with only ignored keys under arbitrary loads", code: "stricter_than_unlisted",
            fix: "write NSExceptionAllowsInsecureHTTPLoads = YES in it",
            xml: "<key>NSAllowsArbitraryLoads</key><true/>" + domain("a.com", "<key>NSIncludesSubdomains</key><true/>"),
            fixed: "<key>NSAllowsArbitraryLoads</key><true/>"
                + domain("a.com", "<key>NSIncludesSubdomains</key><true/>" + insecure)),
        Row(
            label: "global key inside a domain", code: "misplaced_key", fix: "move it to the top level",
            xml: domain("a.com", insecure + "<key>NSAllowsArbitraryLoads</key><true/>"),
            fixed: "<key>NSAllowsArbitraryLoads</key><true/>" + domain("a.com", insecure)),
        Row(
            label: "pins inside a domain", code: "misplaced_key", fix: "move it to NSPinnedDomains[\"a.com\"]",
            xml: domain("a.com", insecure + "<key>NSPinnedLeafIdentities</key>" + spki),
            fixed: domain("a.com", insecure) + pin("a.com")),
        Row(
            label: "misspelt domain key", code: "unknown_key", fix: "did you mean NSIncludesSubdomains?",
            xml: domain("a.com", "<key>NSIncludeSubdomains</key><true/>"),
            fixed: domain("a.com", "<key>NSIncludesSubdomains</key><true/>")),
        Row(
            label: "display name of a domain key", code: "display_name",
            fix: "rename it to NSExceptionMinimumTLSVersion",
            xml: domain("a.com", "<key>Exception Minimum TLS Version</key><string>TLSv1.1</string>"),
            fixed: domain("a.com", "<key>NSExceptionMinimumTLSVersion</key><string>TLSv1.1</string>")),
        Row(
            label: "iOS 9 beta HTTPS key", code: "obsolete_key", fix: "remove it",
            xml: domain("a.com", insecure + "<key>NSTemporaryExceptionAllowsInsecureHTTPSLoads</key><true/>"),
            fixed: domain("a.com", insecure)),
        Row(
            label: "obsolete CT key", code: "obsolete_key", fix: "remove it",
            xml: domain("a.com", insecure + "<key>NSRequiresCertificateTransparency</key><true/>"),
            fixed: domain("a.com", insecure)),
        Row(
            label: "TLS version as a number", code: "wrong_type", fix: "write <string>TLSv1.2</string>",
            xml: domain("a.com", "<key>NSExceptionMinimumTLSVersion</key><real>1.2</real>"),
            fixed: domain("a.com", "<key>NSExceptionMinimumTLSVersion</key><string>TLSv1.2</string>")),
        Row(
            label: "DTLS version", code: "dtls_version", fix: "write TLSv1.1",
            xml: domain("a.com", "<key>NSExceptionMinimumTLSVersion</key><string>DTLSv1.0</string>"),
            fixed: domain("a.com", "<key>NSExceptionMinimumTLSVersion</key><string>TLSv1.1</string>")),
        Row(
            label: "invalid TLS version string", code: "invalid_tls_version", fix: "write <string>TLSv1.3</string>",
            xml: domain("a.com", "<key>NSExceptionMinimumTLSVersion</key><string>TLSV1.3</string>"),
            fixed: domain("a.com", "<key>NSExceptionMinimumTLSVersion</key><string>TLSv1.3</string>")),
        Row(
            label: "TLS version nothing like one", code: "invalid_tls_version", fix: "write one of TLSv1.0",
            xml: domain("a.com", "<key>NSExceptionMinimumTLSVersion</key><string>modern</string>"),
            fixed: domain("a.com", "<key>NSExceptionMinimumTLSVersion</key><string>TLSv1.2</string>")),

        // PinnedDomainParser.swift
        Row(
            label: "NSPinnedDomains not a dictionary", code: "wrong_type", fix: "make it a <dict>",
            xml: "<key>NSPinnedDomains</key><array/>", fixed: pin("a.com")),
        Row(
            label: "misspelt pin key", code: "unknown_key", fix: "did you mean NSPinnedLeafIdentities?",
            xml: pin("a.com", "<key>NSPinnedLeafIdentites</key>" + spki), fixed: pin("a.com")),
        Row(
            label: "display name in a pinned domain", code: "display_name", fix: "rename it to NSPinnedCAIdentities",
            xml: pin("a.com", "<key>Pinned CA Identities</key>" + spki),
            fixed: pin("a.com", "<key>NSPinnedCAIdentities</key>" + spki)),
        Row(
            label: "pin without identities", code: "pin_without_identities", fix: "add the SPKI hashes",
            xml: pin("a.com", ""), fixed: pin("a.com")),
        Row(
            label: "wildcard pin key", code: "never_matches", fix: "write a.com", xml: pin("*.a.com"),
            fixed: pin("a.com")),
        Row(
            label: "pin key with a trailing dot", code: "never_matches", fix: "write a.com", xml: pin("a.com."),
            fixed: pin("a.com")),
        Row(
            label: "pin keys differing in case", code: "duplicate_pin", fix: "merge the two entries",
            xml: pins(
                "<key>A.com</key><dict><key>NSPinnedLeafIdentities</key>\(spki)</dict><key>a.com</key><dict><key>NSPinnedLeafIdentities</key>\(spki)</dict>"
            ),
            fixed: pin("a.com")),
        Row(
            label: "pin subdomains as a string", code: "wrong_type", fix: "write <true/>",
            xml: pin(
                "a.com", "<key>NSIncludesSubdomains</key><string>YES</string><key>NSPinnedLeafIdentities</key>" + spki),
            fixed: pin("a.com", "<key>NSIncludesSubdomains</key><true/><key>NSPinnedLeafIdentities</key>" + spki)),
        Row(
            label: "SHA-1 pin", code: "unknown_key", fix: "use SPKI-SHA256-BASE64",
            xml: pin(
                "a.com",
                "<key>NSPinnedLeafIdentities</key><array><dict><key>SPKI-SHA1-BASE64</key><string>x</string>"
                    + "<key>SPKI-SHA256-BASE64</key><string>C5+lpZ7tcVwmwQIMcRtPbsQtWLABXhQzejna0wHFr8M=</string></dict></array>"
            ),
            fixed: pin("a.com")),
        Row(
            label: "malformed pin", code: "malformed_pin", fix: "openssl x509 -pubkey",
            xml: pin(
                "a.com",
                "<key>NSPinnedLeafIdentities</key><array><dict><key>SPKI-SHA256-BASE64</key><string>c2hhMQ==</string></dict></array>"
            ),
            fixed: pin("a.com")),
    ]

    /// The rows are written by hand, so this keeps them honest: every finding code that comes with a
    /// fix anywhere in the tests' policies (the fixtures, config/, the finding table) has a row here.
    @Test("every finding code that suggests a fix somewhere has a row here")
    func everyFixingCodeHasARow() throws {
        let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let root = here.deletingLastPathComponent().deletingLastPathComponent()
        var files: [String] = []
        for folder in ["Fixtures/policies", "Fixtures/mistakes"] {
            let path = here.appendingPathComponent(folder).path
            files += try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasSuffix(".xml") }.map {
                "\(path)/\($0)"
            }
        }
        let config = root.appendingPathComponent("config").path
        files += try FileManager.default.contentsOfDirectory(atPath: config).filter { $0.hasSuffix(".plist") }.map {
            "\(config)/\($0)"
        }
        var policies = try files.flatMap { file in
            try [PolicySettings(), PolicySettings(legacyKeys: .honor), PolicySettings(osProfile: .ios9)].map {
                try PolicyLoader.load(path: file, settings: $0).policy
            }
        }
        policies += try PolicyFindingTests.rows.map { row in
            try PolicyLoader.load(bytes: Array(Self.document(row.xml).utf8), file: "row.plist", settings: row.settings)
        }
        #expect(files.count >= 20)
        let covered = Set(Self.rows.map(\.code))
        let fixing = Set(policies.flatMap(\.findings).filter { $0.fix != nil }.map(\.code))
        #expect(
            fixing.subtracting(covered).isEmpty, "codes with a fix but no row: \(fixing.subtracting(covered).sorted())")
    }

    static func document(_ inner: String) -> String {
        "<?xml version=\"1.0\"?>\n<plist version=\"1.0\">\n<dict>\n\(inner)\n</dict>\n</plist>\n"
    }

    @Test("the fix is suggested, and applied it leaves fewer findings and not this one", arguments: rows)
    func applied(_ row: Row) throws {
        let before = try BinaryTwin.policies(xml: Self.document(row.xml), settings: row.settings)
        let after = try BinaryTwin.policies(xml: Self.document(row.fixed), settings: row.settings)
        for ((format, broken), (_, fixed)) in zip(before, after) {
            let suggested = broken.findings.filter { $0.code == row.code && $0.fix?.contains(row.fix) == true }
            #expect(!suggested.isEmpty, "\(format): \(broken.findings.map { "\($0.code): \($0.fix ?? "-")" })")
            // Notes are facts about how a policy reads (a fixed pin's one-label reach), not problems:
            // the fix must remove a problem and add no finding of any kind.
            func problems(_ policy: TransportSecurityPolicy) -> Int {
                policy.findings.filter { $0.severity != .info }.count
            }
            #expect(
                problems(fixed) < problems(broken), "\(format): left \(fixed.findings.map { "\($0.code) \($0.path)" })")
            #expect(fixed.findings.count <= broken.findings.count)
            for finding in suggested {
                #expect(
                    !fixed.findings.contains {
                        $0.code == finding.code && $0.path == finding.path && $0.fix == finding.fix
                    },
                    "\(format): the fix did not remove \(finding.code) at \(finding.path)")
            }
        }
    }
}
