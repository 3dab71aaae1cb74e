import ATSProxyCtl
import Foundation
import Testing

/// `check` on the whole-app Info.plists of Tests/ATSPolicyTests/Fixtures/mistakes (issue 14), XML
/// and binary twin: the text report and `--json` name each mistake where it is, and `--strict` fails.
@Suite("atsproxyctl check: mistakes real Info.plists ship")
struct CheckMistakeTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var fixture: String
        var code: String
        var severity: String
        var path: String
        var line: Int
        var says: String
        var fix: String
        var arguments: [String] = []
        var testDescription: String { "\(fixture) \(code)" }
    }

    static let folder = repositoryRoot + "/Tests/ATSPolicyTests/Fixtures/mistakes"

    static let rows: [Row] = [
        Row(
            fixture: "cancelled-local-networking", code: "arbitrary_loads_cancelled", severity: "warning",
            path: "NSAppTransportSecurity.NSAllowsArbitraryLoads", line: 22,
            says: "every http:// load to a public host without an exception is blocked",
            fix: "remove NSAllowsLocalNetworking"),
        Row(
            fixture: "cancelled-web-content", code: "arbitrary_loads_cancelled", severity: "warning",
            path: "NSAppTransportSecurity.NSAllowsArbitraryLoads", line: 13,
            says: "NSAllowsArbitraryLoadsInWebContent set to NO allows nothing",
            fix: "remove NSAllowsArbitraryLoadsInWebContent"),
        Row(
            fixture: "keys-among-domains", code: "misplaced_key", severity: "error",
            path: "NSAppTransportSecurity.NSExceptionDomains.NSIncludeSubdomains", line: 19,
            says: "NSIncludeSubdomains is a misspelling of NSIncludesSubdomains",
            fix: "move it into the dictionary of \"scanner-api.example.com\" and name it NSIncludesSubdomains"),
        Row(
            fixture: "keys-among-domains", code: "misplaced_key", severity: "error",
            path: "NSAppTransportSecurity.NSExceptionDomains.NSAllowsLocalNetworking", line: 25,
            says: "a key of NSAppTransportSecurity, not a host",
            fix: "move it up into the NSAppTransportSecurity dictionary"),
        Row(
            fixture: "two-ats-blocks", code: "duplicate_key", severity: "warning", path: "NSAppTransportSecurity",
            line: 11,
            says: "the last one counts", fix: "merge the keys you need into the block at"),
        Row(
            fixture: "electron-legacy-keys", code: "legacy_key", severity: "warning",
            path: #"NSAppTransportSecurity.NSExceptionDomains["127.0.0.1"].NSTemporaryExceptionMinimumTLSVersion"#,
            line: 33,
            says: "is not a TLS version ATS accepts either",
            fix: "rename it to NSExceptionMinimumTLSVersion and write <string>TLSv1.0</string>"),
        Row(
            fixture: "electron-legacy-keys", code: "obsolete_key", severity: "warning",
            path:
                #"NSAppTransportSecurity.NSExceptionDomains["127.0.0.1"].NSTemporaryExceptionAllowsInsecureHTTPSLoads"#,
            line: 31,
            says: "obsolete iOS 9 beta key", fix: "remove it"),
        Row(
            fixture: "electron-legacy-keys", code: "legacy_key", severity: "warning",
            path:
                #"NSAppTransportSecurity.NSExceptionDomains["localhost"].NSTemporaryExceptionAllowsInsecureHTTPLoads"#,
            line: 42,
            says: "NSExceptionAllowsInsecureHTTPLoads wins",
            fix: "(NSExceptionAllowsInsecureHTTPLoads is already set here)"),
        Row(
            fixture: "contradicting-third-party", code: "contradictory_keys", severity: "warning",
            path:
                #"NSAppTransportSecurity.NSExceptionDomains["adserver.example-ads.com"].NSThirdPartyExceptionAllowsInsecureHTTPLoads"#,
            line: 24,
            says: "an iPhone uses YES, from NSExceptionAllowsInsecureHTTPLoads (it wins even with legacy_keys = honor)",
            fix: "remove NSThirdPartyExceptionAllowsInsecureHTTPLoads", arguments: ["--legacy-keys", "honor"]),
        Row(
            fixture: "stricter-than-unlisted", code: "stricter_than_unlisted", severity: "warning",
            path: #"NSAppTransportSecurity.NSExceptionDomains["leaderboard.example-games.com"]"#, line: 17,
            says: "turns full ATS back on for leaderboard.example-games.com", fix: "remove the entry"),
        Row(
            fixture: "display-names", code: "display_name", severity: "error",
            path: #"NSAppTransportSecurity.NSExceptionDomains["media.example-recipes.com"]["Include Subdomains"]"#,
            line: 20,
            says: "Xcode's display name for NSIncludesSubdomains", fix: "rename it to NSIncludesSubdomains"),
        Row(
            fixture: "display-names-root", code: "display_name", severity: "error",
            path: #"["App Transport Security Settings"]"#, line: 9,
            says: "this whole dictionary is ignored", fix: "rename it to NSAppTransportSecurity"),
        Row(
            fixture: "localhost-subdomains", code: "local_host_listed", severity: "warning",
            path: #"NSAppTransportSecurity.NSExceptionDomains["localhost"]"#, line: 20,
            says: "http://localhost is blocked", fix: "add NSExceptionAllowsInsecureHTTPLoads = YES to the entry"),
    ]

    static let rowsAndFormats = rows.flatMap { row in ["xml", "bplist"].map { (row, $0) } }

    @Test(
        "text: the finding at its line (XML) or byte (binary), its message and fix; --strict exits 1",
        arguments: rowsAndFormats)
    func text(_ row: Row, _ format: String) throws {
        let file = "\(Self.folder)/\(row.fixture).\(format)"
        let result = ATSProxyCtl.run(["check", file, "--strict"] + row.arguments)
        #expect(result.exitCode == 1, "\(result.standardOutput)\(result.standardError)")
        let position = format == "xml" ? "\(file):\(row.line):" : "\(file) (byte "
        let lines = result.standardOutput.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let heading = lines.firstIndex { $0.hasPrefix(position) && $0.hasSuffix(": \(row.severity): \(row.path)") }
        let index = try #require(heading, "\(result.standardOutput)")
        try #require(index + 2 < lines.count)
        #expect(lines[index + 1].contains(row.says), "\(lines[index + 1])")
        #expect(lines[(index + 1)...].prefix(3).contains { $0.hasPrefix("    fix: ") && $0.contains(row.fix) })
    }

    @Test("--json: code, severity, path, line (XML only), message and fix; ok is false", arguments: rowsAndFormats)
    func json(_ row: Row, _ format: String) throws {
        let result = ATSProxyCtl.run(["check", "\(Self.folder)/\(row.fixture).\(format)", "--json"] + row.arguments)
        #expect(result.exitCode == 0)
        let report = try #require(try jsonLines(result.standardOutput).first)
        #expect(report["ok"] as? Bool == false)
        let findings = try #require(report["findings"] as? [[String: Any]])
        let finding = try #require(
            findings.first { $0["code"] as? String == row.code && $0["path"] as? String == row.path })
        #expect(finding["severity"] as? String == row.severity)
        if format == "xml" { #expect(finding["line"] as? Int == row.line) }
        #expect((finding["message"] as? String)?.contains(row.says) == true)
        #expect((finding["fix"] as? String)?.contains(row.fix) == true)
    }
}
