import Foundation
import Testing
import TextFormats

@testable import ATSPolicy

/// Mistakes seen in Info.plists that real apps ship (issue 14). Each fixture is a whole app
/// Info.plist as Xcode or a generator writes it, kept as XML with a binary twin made by
/// Fixtures/make-binary-fixtures.py; a `-fixed` fixture is the same file with `check`'s fix applied.
enum MistakeFixture {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/mistakes").path
    static let formats = ["xml", "bplist"]

    static func load(_ name: String, _ suffix: String, _ settings: PolicySettings = .default) throws
        -> TransportSecurityPolicy
    {
        try PolicyLoader.load(path: "\(folder)/\(name).\(suffix)", settings: settings).policy
    }
}

/// What the author of a fixture meant, checked on the fixed policy: the fix must keep it.
struct Intent: Sendable, CustomStringConvertible {
    var host: String
    var scheme: URLScheme = .http
    var client: ClientClass = .urlsession
    var cleartextAllowed: Bool

    var description: String { "\(scheme)://\(host) (\(client)) cleartext \(cleartextAllowed ? "allowed" : "blocked")" }
}

struct MistakeRow: Sendable, CustomTestStringConvertible {
    var label: String
    var fixture: String
    var settings: PolicySettings = .default
    var code: String
    var severity: Finding.Severity
    var path: String
    /// The XML line the finding points at.
    var line: Int
    /// Phrases the message holds in both forms.
    var says: [String]
    /// Phrases only the XML form can hold (other keys' lines; a binary twin names byte offsets).
    var xmlSays: [String] = []
    var fix: String
    /// The fixture with the fix applied, and what must still hold there.
    var fixed: String
    var intent: [Intent]

    var testDescription: String { label }
}

@Suite("Mistakes real Info.plists ship")
struct ShippedMistakeTests {
    static let rows: [MistakeRow] = [
        MistakeRow(
            label: "NSAllowsLocalNetworking = YES cancels NSAllowsArbitraryLoads",
            fixture: "cancelled-local-networking", code: "arbitrary_loads_cancelled", severity: .warning,
            path: "NSAppTransportSecurity.NSAllowsArbitraryLoads", line: 22,
            says: ["NSAllowsLocalNetworking", "every http:// load to a public host without an exception is blocked"],
            xmlSays: ["NSAllowsArbitraryLoads (line 22, column 3)", "NSAllowsLocalNetworking (line 24, column 3)"],
            fix: "remove NSAllowsLocalNetworking", fixed: "cancelled-local-networking-fixed",
            intent: [
                Intent(host: "feeds.example.com", cleartextAllowed: true),
                Intent(host: "macbook.local", cleartextAllowed: true),
                Intent(host: "localhost", cleartextAllowed: true),
            ]),
        MistakeRow(
            label: "NSAllowsArbitraryLoadsInWebContent = NO cancels NSAllowsArbitraryLoads",
            fixture: "cancelled-web-content", code: "arbitrary_loads_cancelled", severity: .warning,
            path: "NSAppTransportSecurity.NSAllowsArbitraryLoads", line: 13,
            says: ["NSAllowsArbitraryLoadsInWebContent set to NO allows nothing", "blocked (error -1022)"],
            xmlSays: ["NSAllowsArbitraryLoadsInWebContent (line 16, column 7)"],
            fix: "remove NSAllowsArbitraryLoadsInWebContent", fixed: "cancelled-web-content-fixed",
            intent: [Intent(host: "shop.example.com", cleartextAllowed: true)]),
        // Class 2: ATS keys written straight inside NSExceptionDomains, one `</dict>` too early.
        MistakeRow(
            label: "misspelt NSIncludesSubdomains among the hosts",
            fixture: "keys-among-domains", code: "misplaced_key", severity: .error,
            path: "NSAppTransportSecurity.NSExceptionDomains.NSIncludeSubdomains", line: 19,
            says: ["NSIncludeSubdomains is a misspelling of NSIncludesSubdomains", "misplaced", "not a host"],
            fix: "move it into the dictionary of \"scanner-api.example.com\" and name it NSIncludesSubdomains",
            fixed: "keys-among-domains-fixed", intent: keysAmongDomainsIntent),
        MistakeRow(
            label: "NSExceptionAllowsInsecureHTTPLoads among the hosts",
            fixture: "keys-among-domains", code: "misplaced_key", severity: .error,
            path: "NSAppTransportSecurity.NSExceptionDomains.NSExceptionAllowsInsecureHTTPLoads", line: 21,
            says: ["a key of an exception domain's dictionary, not a host", "the setting is lost"],
            fix: "move it into the dictionary of \"scanner-api.example.com\"",
            fixed: "keys-among-domains-fixed", intent: keysAmongDomainsIntent),
        MistakeRow(
            label: "legacy NSTemporaryException key among the hosts",
            fixture: "keys-among-domains", code: "misplaced_key", severity: .error,
            path: "NSAppTransportSecurity.NSExceptionDomains.NSTemporaryExceptionMinimumTLSVersion", line: 23,
            says: ["misplaced", "legacy key ATS no longer reads (now NSExceptionMinimumTLSVersion)"],
            fix: "move it into the dictionary of \"scanner-api.example.com\" and name it NSExceptionMinimumTLSVersion",
            fixed: "keys-among-domains-fixed", intent: keysAmongDomainsIntent),
        MistakeRow(
            label: "global NSAllowsLocalNetworking among the hosts",
            fixture: "keys-among-domains", code: "misplaced_key", severity: .error,
            path: "NSAppTransportSecurity.NSExceptionDomains.NSAllowsLocalNetworking", line: 25,
            says: ["a key of NSAppTransportSecurity, not a host"],
            fix: "move it up into the NSAppTransportSecurity dictionary",
            fixed: "keys-among-domains-fixed", intent: keysAmongDomainsIntent),
        // Class 3: a plugin's install hook appends a second NSAppTransportSecurity block.
        MistakeRow(
            label: "a second NSAppTransportSecurity block at the root",
            fixture: "two-ats-blocks", code: "duplicate_key", severity: .warning, path: "NSAppTransportSecurity",
            line: 11,
            says: [
                "appears 2 times", "the last one counts", "is ignored whole",
                "would have allowed: stream.example.fm and all its subdomains: cleartext HTTP allowed",
            ],
            xmlSays: ["(line 29, column 5)", "this block (line 11, column 2)"],
            fix: "merge the keys you need into the block at", fixed: "two-ats-blocks-fixed",
            intent: [
                Intent(host: "stream.example.fm", cleartextAllowed: true),
                Intent(host: "eu.stream.example.fm", cleartextAllowed: true),
                Intent(host: "livingroom-tv.local", cleartextAllowed: true),
                Intent(host: "ads.example.com", cleartextAllowed: false),
            ]),
        // Class 4: electron-builder's default entries, where the obvious fix would still be wrong.
        MistakeRow(
            label: "legacy TLS key with electron-builder's \"1.0\"",
            fixture: "electron-legacy-keys", code: "legacy_key", severity: .warning,
            path: #"NSAppTransportSecurity.NSExceptionDomains["127.0.0.1"].NSTemporaryExceptionMinimumTLSVersion"#,
            line: 33,
            says: ["a string \"1.0\", is not a TLS version ATS accepts either"],
            fix: "rename it to NSExceptionMinimumTLSVersion and write <string>TLSv1.0</string>",
            fixed: "electron-legacy-keys-fixed", intent: electronIntent),
        MistakeRow(
            label: "iOS 9 beta HTTPS key is obsolete, not a typo",
            fixture: "electron-legacy-keys", code: "obsolete_key", severity: .warning,
            path:
                #"NSAppTransportSecurity.NSExceptionDomains["127.0.0.1"].NSTemporaryExceptionAllowsInsecureHTTPSLoads"#,
            line: 31,
            says: ["obsolete iOS 9 beta key", "not a misspelling of NSExceptionAllowsInsecureHTTPLoads"],
            fix: "remove it", fixed: "electron-legacy-keys-fixed", intent: electronIntent),
        MistakeRow(
            label: "legacy key next to the NSException key it would be renamed to",
            fixture: "electron-legacy-keys", code: "legacy_key", severity: .warning,
            path:
                #"NSAppTransportSecurity.NSExceptionDomains["localhost"].NSTemporaryExceptionAllowsInsecureHTTPLoads"#,
            line: 42,
            says: [
                "NSExceptionAllowsInsecureHTTPLoads is also set in this dictionary: NSExceptionAllowsInsecureHTTPLoads wins"
            ],
            fix:
                "remove NSTemporaryExceptionAllowsInsecureHTTPLoads (NSExceptionAllowsInsecureHTTPLoads is already set here)",
            fixed: "electron-legacy-keys-fixed", intent: electronIntent),
        // Class 5: an SDK's third-party keys pasted next to the app's own, with the opposite values.
        MistakeRow(
            label: "first- and third-party insecure-HTTP keys contradict",
            fixture: "contradicting-third-party", code: "contradictory_keys", severity: .warning,
            path:
                #"NSAppTransportSecurity.NSExceptionDomains["adserver.example-ads.com"].NSThirdPartyExceptionAllowsInsecureHTTPLoads"#,
            line: 24,
            says: [
                "NSExceptionAllowsInsecureHTTPLoads = YES and NSThirdPartyExceptionAllowsInsecureHTTPLoads = NO contradict",
                "an iPhone uses YES, from NSExceptionAllowsInsecureHTTPLoads",
            ],
            fix:
                "remove NSThirdPartyExceptionAllowsInsecureHTTPLoads; if NO is what the host needs, write it in NSExceptionAllowsInsecureHTTPLoads",
            fixed: "contradicting-third-party-fixed", intent: adserverIntent),
        MistakeRow(
            label: "the same contradiction with legacy_keys = honor",
            fixture: "contradicting-third-party", settings: PolicySettings(legacyKeys: .honor),
            code: "contradictory_keys", severity: .warning,
            path:
                #"NSAppTransportSecurity.NSExceptionDomains["adserver.example-ads.com"].NSThirdPartyExceptionAllowsInsecureHTTPLoads"#,
            line: 24, says: ["an iPhone uses YES", "it wins even with legacy_keys = honor"],
            fix: "remove NSThirdPartyExceptionAllowsInsecureHTTPLoads", fixed: "contradicting-third-party-fixed",
            intent: adserverIntent),
        MistakeRow(
            label: "first- and third-party forward-secrecy keys contradict",
            fixture: "contradicting-third-party", code: "contradictory_keys", severity: .warning,
            path:
                #"NSAppTransportSecurity.NSExceptionDomains["adserver.example-ads.com"].NSThirdPartyExceptionRequiresForwardSecrecy"#,
            line: 26, says: ["an iPhone uses YES, from NSExceptionRequiresForwardSecrecy"],
            fix: "remove NSThirdPartyExceptionRequiresForwardSecrecy", fixed: "contradicting-third-party-fixed",
            intent: adserverIntent),
        // Class 6: under NSAllowsArbitraryLoads, a listed host with nothing in effect gets full ATS back.
        MistakeRow(
            label: "an empty entry under NSAllowsArbitraryLoads",
            fixture: "stricter-than-unlisted", code: "stricter_than_unlisted", severity: .warning,
            path: #"NSAppTransportSecurity.NSExceptionDomains["leaderboard.example-games.com"]"#, line: 17,
            says: [
                "listing \"leaderboard.example-games.com\" with an empty entry turns full ATS back on",
                "http:// is blocked", "stricter than unlisted hosts",
            ],
            fix: "remove the entry", fixed: "stricter-than-unlisted-fixed", intent: stricterIntent),
        MistakeRow(
            label: "an entry with only an ignored legacy key under NSAllowsArbitraryLoads",
            fixture: "stricter-than-unlisted", code: "stricter_than_unlisted", severity: .warning,
            path: #"NSAppTransportSecurity.NSExceptionDomains["assets.example-cdn.net"]"#, line: 19,
            says: [
                "holding only NSIncludesSubdomains and keys ATS ignores (NSTemporaryExceptionAllowsInsecureHTTPLoads)",
                "full ATS back on for assets.example-cdn.net and its subdomains",
            ],
            fix: "NSExceptionAllowsInsecureHTTPLoads = YES", fixed: "stricter-than-unlisted-fixed",
            intent: stricterIntent),
        // Class 7: keys written as Xcode's plist editor displays them, by a generator script.
        MistakeRow(
            label: "\"Allow Arbitrary Loads in Web Content\" for NSAllowsArbitraryLoadsInWebContent",
            fixture: "display-names", code: "display_name", severity: .error,
            path: #"NSAppTransportSecurity["Allow Arbitrary Loads in Web Content"]"#, line: 14,
            says: ["Xcode's display name for NSAllowsArbitraryLoadsInWebContent", "this setting is ignored"],
            fix: "rename it to NSAllowsArbitraryLoadsInWebContent", fixed: "display-names-fixed",
            intent: displayNamesIntent),
        MistakeRow(
            label: "\"Include Subdomains\" for NSIncludesSubdomains",
            fixture: "display-names", code: "display_name", severity: .error,
            path: #"NSAppTransportSecurity.NSExceptionDomains["media.example-recipes.com"]["Include Subdomains"]"#,
            line: 20,
            says: ["Xcode's display name for NSIncludesSubdomains"],
            fix: "rename it to NSIncludesSubdomains", fixed: "display-names-fixed", intent: displayNamesIntent),
        MistakeRow(
            label: "\"Allow Arbitrary Loads\" among the exception domains",
            fixture: "display-names", code: "misplaced_key", severity: .error,
            path: #"NSAppTransportSecurity.NSExceptionDomains["Allow Arbitrary Loads"]"#, line: 25,
            says: ["Xcode's display name for NSAllowsArbitraryLoads", "not a host"],
            fix: "move it up into the NSAppTransportSecurity dictionary and name it NSAllowsArbitraryLoads",
            fixed: "display-names-fixed", intent: displayNamesIntent),
        MistakeRow(
            label: "\"App Transport Security Settings\" at the Info.plist root",
            fixture: "display-names-root", code: "display_name", severity: .error,
            path: #"["App Transport Security Settings"]"#, line: 9,
            says: ["Xcode's display name for NSAppTransportSecurity", "this whole dictionary is ignored"],
            fix: "rename it to NSAppTransportSecurity", fixed: "display-names-root-fixed",
            intent: [
                Intent(host: "10.0.0.8", cleartextAllowed: false),
                Intent(host: "kiosk-hub.local", cleartextAllowed: true),
            ]),
        // Class 8: localhost listed (with subdomains) for a dev server, its insecure key ignored.
        MistakeRow(
            label: "localhost listed with NSIncludesSubdomains",
            fixture: "localhost-subdomains", code: "local_host_listed", severity: .warning,
            path: #"NSAppTransportSecurity.NSExceptionDomains["localhost"]"#, line: 20,
            says: [
                "takes it out of the local-host exemption", "http://localhost is blocked",
                "NSIncludesSubdomains only extends the same to names under localhost",
            ],
            fix: "add NSExceptionAllowsInsecureHTTPLoads = YES to the entry", fixed: "localhost-subdomains-fixed",
            intent: [
                Intent(host: "localhost", cleartextAllowed: true),
                Intent(host: "packager.localhost", cleartextAllowed: true),
            ]),
    ]

    @Test(
        "localhost is not called a whole top-level domain; ios9, which has no exemption, keeps the old finding",
        arguments: MistakeFixture.formats)
    func localhostNotATLD(_ format: String) throws {
        let policy = try MistakeFixture.load("localhost-subdomains", format)
        #expect(!policy.findings.contains { $0.code == "whole_tld" })
        #expect(try !policy.requirements(forHost: "localhost", scheme: .http).cleartextAllowed, "what the finding says")
        let ios9 = try MistakeFixture.load("localhost-subdomains", format, PolicySettings(osProfile: .ios9))
        #expect(!ios9.findings.contains { $0.code == "local_host_listed" })
    }

    static let displayNamesIntent = [
        Intent(host: "media.example-recipes.com", cleartextAllowed: true),
        Intent(host: "cdn.media.example-recipes.com", cleartextAllowed: true),
        Intent(host: "blog.example.org", client: .webkit, cleartextAllowed: true),
    ]

    static let stricterIntent = [
        Intent(host: "leaderboard.example-games.com", cleartextAllowed: true),
        Intent(host: "assets.example-cdn.net", cleartextAllowed: true),
        Intent(host: "img.assets.example-cdn.net", cleartextAllowed: true),
        Intent(host: "analytics.example.io", cleartextAllowed: true),
    ]

    @Test(
        "no such warning where the entry allows http://, or arbitrary loads are cancelled or off",
        arguments: MistakeFixture.formats)
    func stricterOnlyWhereItIs(_ format: String) throws {
        let policy = try MistakeFixture.load("stricter-than-unlisted", format)
        #expect(!policy.findings.contains { $0.path.description.contains("analytics.example.io") })
        #expect(!policy.findings.contains { $0.code == "empty_exception" }, "the warning replaces the note")
        for xml in [
            "<key>NSAllowsArbitraryLoads</key><true/><key>NSAllowsLocalNetworking</key><true/>"
                + "<key>NSExceptionDomains</key><dict><key>a.com</key><dict/></dict>",
            "<key>NSExceptionDomains</key><dict><key>a.com</key><dict/></dict>",
            "<key>NSAllowsArbitraryLoads</key><true/><key>NSExceptionDomains</key><dict><key>*.a.com</key><dict/></dict>",
        ] {
            for (_, policy) in try BinaryTwin.policies(xml: EveryFixTests.document(xml)) {
                #expect(!policy.findings.contains { $0.code == "stricter_than_unlisted" }, "\(xml)")
            }
        }
    }

    static let adserverIntent = [
        Intent(host: "adserver.example-ads.com", cleartextAllowed: true),
        Intent(host: "eu.adserver.example-ads.com", cleartextAllowed: true),
    ]

    @Test(
        "the value the contradiction finding names is the one the policy applies, either legacy_keys setting",
        arguments: MistakeFixture.formats, LegacyKeyHandling.allCases)
    func contradictionMatchesSummary(_ format: String, _ legacyKeys: LegacyKeyHandling) throws {
        let policy = try MistakeFixture.load(
            "contradicting-third-party", format, PolicySettings(legacyKeys: legacyKeys))
        let requirements = try policy.requirements(forHost: "adserver.example-ads.com", scheme: .http)
        #expect(requirements.cleartextAllowed)
        #expect(try policy.requirements(forHost: "adserver.example-ads.com").requiresForwardSecrecy)
        #expect(!policy.findings.contains { $0.message.contains("read as") }, "no note claims the legacy key is read")
        #expect(
            policy.summary.lines.contains {
                $0.contains("adserver.example-ads.com and all its subdomains: cleartext HTTP allowed")
            })
    }

    @Test("a lost block's pins are named as pins, not as something it allowed", arguments: [false, true])
    func lostBlockPins(_ withException: Bool) throws {
        let spki =
            "<array><dict><key>SPKI-SHA256-BASE64</key><string>C5+lpZ7tcVwmwQIMcRtPbsQtWLABXhQzejna0wHFr8M=</string></dict></array>"
        let lost =
            "<key>NSPinnedDomains</key><dict><key>api.example.com</key><dict><key>NSPinnedLeafIdentities</key>\(spki)</dict></dict>"
            + (withException
                ? "<key>NSExceptionDomains</key><dict><key>old.example.com</key><dict>"
                    + "<key>NSExceptionAllowsInsecureHTTPLoads</key><true/></dict></dict>" : "")
        let xml = EveryFixTests.document(
            "<key>CFBundleIdentifier</key><string>com.example</string><key>NSAppTransportSecurity</key><dict>\(lost)</dict>"
                + "<key>NSAppTransportSecurity</key><dict/>")
        for (format, policy) in try BinaryTwin.policies(xml: xml) {
            let finding = try #require(policy.findings.first { $0.code == "duplicate_key" }, "\(format)")
            #expect(
                finding.message.contains("and it would have pinned: api.example.com: leaf key one of 1"), "\(format)")
            #expect(
                finding.message.contains("it allows nothing the kept block does not") == !withException, "\(format)")
            #expect(
                finding.message.contains("would have allowed: old.example.com: cleartext HTTP allowed") == withException
            )
        }
    }

    static let electronIntent = [
        Intent(host: "127.0.0.1", cleartextAllowed: true),
        Intent(host: "localhost", cleartextAllowed: true),
    ]

    static let keysAmongDomainsIntent = [
        Intent(host: "scanner-api.example.com", cleartextAllowed: true),
        Intent(host: "eu.scanner-api.example.com", cleartextAllowed: true),
        Intent(host: "scanner.local", cleartextAllowed: true),
    ]

    static let rowsAndFormats = rows.flatMap { row in MistakeFixture.formats.map { (row, $0) } }

    @Test("names the mistake with its severity, path, line, effect and fix", arguments: rowsAndFormats)
    func finding(_ row: MistakeRow, _ format: String) throws {
        let policy = try MistakeFixture.load(row.fixture, format, row.settings)
        let found = try #require(
            policy.findings.first { $0.code == row.code && $0.path.description == row.path },
            "findings were: \(policy.findings.map { "\($0.code) \($0.path)" })")
        #expect(found.severity == row.severity)
        if format == "xml" {
            #expect(found.location.line == row.line)
        } else {
            #expect(found.location.byteOffset != nil)
        }
        #expect(
            !policy.findings.contains { $0.code == "entry_not_dictionary" && $0.path == found.path },
            "one finding per mistake, not a second one calling the key a host")
        for phrase in row.says + (format == "xml" ? row.xmlSays : []) {
            #expect(found.message.contains(phrase), "\(found.message)")
        }
        #expect(found.fix?.contains(row.fix) == true, "\(found.fix ?? "no fix")")
    }

    @Test("the fix applied: fewer findings, this one gone, the same intent", arguments: rowsAndFormats)
    func fixApplied(_ row: MistakeRow, _ format: String) throws {
        let before = try MistakeFixture.load(row.fixture, format, row.settings)
        let after = try MistakeFixture.load(row.fixed, format, row.settings)
        #expect(after.findings.count < before.findings.count)
        #expect(!after.findings.contains { $0.code == row.code && $0.path.description == row.path })
        for intent in row.intent {
            let requirements = try after.requirements(
                forHost: intent.host, scheme: intent.scheme, clientClass: intent.client)
            #expect(requirements.cleartextAllowed == intent.cleartextAllowed, "\(intent)")
        }
    }

    @Test("no cancelling on the ios9 profile, where the narrow keys did not exist", arguments: MistakeFixture.formats)
    func noCancellingOnIOS9(_ format: String) throws {
        for fixture in ["cancelled-local-networking", "cancelled-web-content"] {
            let policy = try MistakeFixture.load(fixture, format, PolicySettings(osProfile: .ios9))
            #expect(!policy.findings.contains { $0.code == "arbitrary_loads_cancelled" }, "\(fixture)")
            #expect(try policy.requirements(forHost: "feeds.example.com", scheme: .http).cleartextAllowed)
        }
    }
}
