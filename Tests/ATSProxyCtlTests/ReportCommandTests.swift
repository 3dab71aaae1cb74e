import ATSPolicy
import ATSProxyCtl
import Foundation
import Testing

/// `atsproxyctl report` on a recorded day of device traffic (Fixtures/report, described in its
/// README): three log files, the oldest gzip-compressed by logrotate, the newest torn by a crash.
@Suite("atsproxyctl report")
struct ReportCommandTests {
    static let directory = repositoryRoot + "/Tests/ATSProxyCtlTests/Fixtures/report/"
    static let logs = ["atsproxy.log.2.gz", "atsproxy.log.1", "atsproxy.log"].map { directory + $0 }
    static let currentPolicy = directory + "current.plist"

    static func run(_ extra: [String]) -> ATSProxyCtl.Result { ATSProxyCtl.run(["report"] + logs + extra) }

    static func jsonReport(_ extra: [String] = []) throws -> [String: Any] {
        let result = run(extra + ["--json"])
        #expect(result.exitCode == 0, "\(result.standardError)")
        return try #require(try jsonLines(result.standardOutput).first)
    }

    /// The narrowest policy for the day, key by key: a reviewer reads exactly this.
    static let expectedSuggestion = """
        {"NSAppTransportSecurity":{"NSExceptionDomains":{\
        "assets.example.com":{"NSExceptionMinimumTLSVersion":"TLSv1.1"},\
        "cdn.exampleimg.com":{"NSIncludesSubdomains":true,"NSExceptionMinimumTLSVersion":"TLSv1.1"},\
        "feed.example.org":{"NSExceptionAllowsInsecureHTTPLoads":true},\
        "legacy.example.com":{"NSExceptionMinimumTLSVersion":"TLSv1.0"},\
        "media.example.org":{"NSExceptionMinimumTLSVersion":"TLSv1.1"},\
        "old.example.org":{"NSExceptionMinimumTLSVersion":"TLSv1.0"},\
        "pay.example.net":{"NSExceptionRequiresForwardSecrecy":false},\
        "s9.cdn.exampleimg.com":{"NSExceptionMinimumTLSVersion":"TLSv1.0"},\
        "tracker.example.io":{"NSExceptionAllowsInsecureHTTPLoads":true},\
        "v1.static.videocdn.net":{"NSExceptionRequiresForwardSecrecy":false},\
        "v2.static.videocdn.net":{"NSExceptionRequiresForwardSecrecy":false}}}}
        """

    @Test("--json: the suggestion is exactly the narrowest policy, in the contract's shape")
    func suggestion() throws {
        let result = Self.run(["--json"])
        #expect(result.exitCode == 0)
        // Compared as written, so key order (Apple's documented order within an entry) is checked too.
        let suggested = try #require(result.standardOutput.firstRange(of: #/"suggested":(\{.*?\}\}\}\})/#))
        #expect(String(result.standardOutput[suggested].dropFirst("\"suggested\":".count)) == Self.expectedSuggestion)
        let object = try Self.jsonReport()
        for key in ["hosts", "suggested", "unfixable", "unused", "missing", "exempt", "subdomains", "files", "skipped"]
        {
            #expect(object[key] != nil, "no \(key)")
        }
        #expect(object["policy"] is NSNull)
        #expect((object["unused"] as? [Any])?.isEmpty == true, "nothing to compare with, nothing unused")
        #expect(!result.standardOutput.contains("NSAllowsArbitraryLoads"))
    }

    @Test(
        "hosts: counts, status and needs per host, from all three files",
        arguments: [
            ("api.example.com", 6, 5, 0, 1, "compliant", [String: String]()),
            ("legacy.example.com", 2, 1, 1, 0, "needs_exception", ["NSExceptionMinimumTLSVersion": "TLSv1.0"]),
            // Seen at TLS 1.1 in the compressed file and at TLS 1.0 the next day: the floor goes to 1.0.
            ("old.example.org", 2, 2, 0, 0, "needs_exception", ["NSExceptionMinimumTLSVersion": "TLSv1.0"]),
            ("s1.cdn.exampleimg.com", 2, 2, 0, 0, "needs_exception", ["NSExceptionMinimumTLSVersion": "TLSv1.1"]),
            ("tracker.example.io", 2, 1, 0, 1, "needs_exception", ["NSExceptionAllowsInsecureHTTPLoads": "true"]),
            // What its traffic would need if ATS applied to it; as a local host it gets no entry.
            ("localhost", 1, 1, 0, 0, "exempt", ["NSExceptionAllowsInsecureHTTPLoads": "true"]),
            ("down.example.com", 1, 0, 0, 1, "unreached", [:]),
            ("expired.example.net", 1, 0, 1, 0, "unfixable", [:]),
        ])
    func hosts(
        host: String, connections: Int, allowed: Int, blocked: Int, failed: Int, status: String, needs: [String: String]
    ) throws {
        let hosts = try #require(try Self.jsonReport()["hosts"] as? [[String: Any]])
        #expect(hosts.count == 22)
        let entry = try #require(hosts.first { $0["host"] as? String == host })
        #expect(entry["connections"] as? Int == connections)
        #expect(entry["allowed"] as? Int == allowed)
        #expect(entry["blocked"] as? Int == blocked)
        #expect(entry["failed"] as? Int == failed)
        #expect(entry["status"] as? String == status)
        let written = (entry["needs"] as? [String: Any] ?? [:]).mapValues { "\($0)" == "1" ? "true" : "\($0)" }
        #expect(written == needs)
    }

    @Test("unfixable hosts are listed apart with their violations and reasons, and get no entry")
    func unfixable() throws {
        let unfixable = try #require(try Self.jsonReport()["unfixable"] as? [[String: Any]])
        #expect(
            unfixable.map { $0["host"] as? String } == [
                "dhe.example.org", "expired.example.net", "selfsigned.example.net",
            ])
        #expect(
            unfixable.map { $0["violations"] as? [String] } == [["cipher_not_ats"], ["expired"], ["untrusted_chain"]])
        let reasons = unfixable.compactMap { ($0["reasons"] as? [String])?.first }
        #expect(reasons[1].hasPrefix("the leaf certificate \"CN=expired.example.net\" expired on 2026-10-01T00:00:00Z"))
        // selfsigned also negotiated TLS 1.0: what it would need once its certificate is fixed.
        #expect((unfixable[2]["needs"] as? [String: String]) == ["NSExceptionMinimumTLSVersion": "TLSv1.0"])
        #expect(!Self.expectedSuggestion.contains("selfsigned") && !Self.expectedSuggestion.contains("expired"))
    }

    @Test("--policy: the exceptions never needed (ready to delete) and the keys the traffic lacks")
    func comparedWithPolicy() throws {
        let object = try Self.jsonReport(["--policy", Self.currentPolicy])
        #expect(object["policy"] as? String == Self.currentPolicy)
        let unused = try #require(object["unused"] as? [[String: Any]])
        #expect(
            unused.map { "\($0["action"]!) \($0["path"]!)" } == [
                "raise NSExceptionDomains › media.example.org › NSExceptionMinimumTLSVersion",
                "delete NSExceptionDomains › pay.example.net › NSExceptionMinimumTLSVersion",
                "delete NSExceptionDomains › pay.example.net › NSExceptionAllowsInsecureHTTPLoads",
                "delete NSExceptionDomains › retired.example.com",
                "delete NSAllowsArbitraryLoadsInWebContent",
            ])
        #expect(unused[0]["replacement"] as? String == "TLSv1.1")
        let missing = try #require(object["missing"] as? [[String: Any]])
        #expect(
            missing.map { "\($0["path"]!) = \($0["value"]!)" } == [
                "NSExceptionDomains › assets.example.com › NSExceptionMinimumTLSVersion = TLSv1.1",
                "NSExceptionDomains › feed.example.org › NSExceptionAllowsInsecureHTTPLoads = true",
                "NSExceptionDomains › legacy.example.com › NSExceptionMinimumTLSVersion = TLSv1.0",
                "NSExceptionDomains › s9.cdn.exampleimg.com › NSExceptionMinimumTLSVersion = TLSv1.0",
                "NSExceptionDomains › tracker.example.io › NSExceptionAllowsInsecureHTTPLoads = true",
                "NSExceptionDomains › v1.static.videocdn.net › NSExceptionRequiresForwardSecrecy = false",
                "NSExceptionDomains › v2.static.videocdn.net › NSExceptionRequiresForwardSecrecy = false",
            ])
    }

    @Test("the suggestion, loaded as a policy, grants each recorded host exactly what it needs")
    func suggestionIsExact() throws {
        let result = Self.run([])
        let start = try #require(result.standardOutput.range(of: "<key>NSAppTransportSecurity</key>"))
        let end = try #require(
            result.standardOutput.range(of: "\n</dict>\n", range: start.upperBound..<result.standardOutput.endIndex))
        let fragment = String(result.standardOutput[start.lowerBound..<end.upperBound])
        let document = "<plist version=\"1.0\"><dict>\(fragment)</dict></plist>"
        let suggested = try PolicyLoader.load(bytes: Array(document.utf8), file: "suggested", settings: .default)
        let hosts = try #require(try Self.jsonReport()["hosts"] as? [[String: Any]])
        for host in hosts {
            let name = try #require(host["host"] as? String)
            let status = try #require(host["status"] as? String)
            let needs = host["needs"] as? [String: Any] ?? [:]
            let https = try suggested.requirements(forHost: name)
            let http = try suggested.requirements(forHost: name, scheme: .http)
            switch status {
            case "exempt":
                #expect(https.rule.kind == .local, "\(name)")
            case "needs_exception", "compliant", "unfixable", "unreached":
                let floor = needs["NSExceptionMinimumTLSVersion"] as? String
                // Unfixable and unreached hosts get nothing; the others exactly their needs.
                let granted = status == "needs_exception"
                #expect(https.minimumTLSVersion?.plistName == (granted ? floor ?? "TLSv1.2" : "TLSv1.2"), "\(name)")
                #expect(
                    https.requiresForwardSecrecy == !(granted && needs["NSExceptionRequiresForwardSecrecy"] != nil),
                    "\(name)")
                #expect(
                    http.cleartextAllowed == (granted && needs["NSExceptionAllowsInsecureHTTPLoads"] != nil), "\(name)")
            default:
                Issue.record("unknown status \(status) for \(name)")
            }
        }
    }

    @Test("text: the table, the Info.plist fragment to paste, and a warning naming the torn line")
    func text() throws {
        let result = Self.run(["--policy", Self.currentPolicy])
        #expect(result.exitCode == 0)
        #expect(
            result.standardError
                == "atsproxyctl: warning: \(Self.directory)atsproxy.log:10:107: unterminated string; line skipped\n")
        let out = result.standardOutput
        #expect(
            out.hasPrefix("3 log files (1 compressed), 36 connections, 22 hosts; 1 line skipped (see the warnings)\n"))
        #expect(
            out.contains(
                "\nHOST                    CONN  ALLOWED  BLOCKED  FAILED  VIOLATIONS                   NEEDS\n"))
        #expect(
            out.contains(
                "\ns2.cdn.exampleimg.com      1        1        0       0  -                            TLSv1.1 floor (via cdn.exampleimg.com)\n"
            ))
        #expect(
            out.contains(
                """
                \t\t<key>cdn.exampleimg.com</key>
                \t\t<dict>
                \t\t\t<key>NSIncludesSubdomains</key>
                \t\t\t<true/>
                \t\t\t<key>NSExceptionMinimumTLSVersion</key>
                \t\t\t<string>TLSv1.1</string>
                \t\t</dict>

                """))
        #expect(
            out.contains(
                "  not at static.videocdn.net: v3.static.videocdn.net under static.videocdn.net needs less than"))
        #expect(out.contains("Exempt from ATS as local hosts (no key needed): localhost, printer.local\n"))
        #expect(out.contains("  delete  NSExceptionDomains › retired.example.com: no observed host matches it\n"))
        #expect(
            out.contains("  add     NSExceptionDomains › legacy.example.com › NSExceptionMinimumTLSVersion = TLSv1.0: ")
        )
    }

    @Test(
        "bad input exits 2 and names what is wrong",
        arguments: [
            (["report", "/nonexistent/atsproxy.log"], "atsproxyctl: error: /nonexistent/atsproxy.log: no such file"),
            (
                ["report", directory + "atsproxy.log", "--policy", "/nonexistent/Info.plist"],
                "atsproxyctl: error: --policy: /nonexistent/Info.plist: no such file"
            ),
            (
                ["report", directory + "current.plist"],
                "atsproxyctl: error: none of the 47 lines read is an atsproxy connection record"
            ),
            (["report"], "name at least one LOG file"),
        ])
    func badInput(arguments: [String], message: String) {
        let result = ATSProxyCtl.run(arguments)
        #expect(result.exitCode == 2)
        #expect(result.standardError.contains(message), "\(result.standardError)")
    }

    @Test("an empty log (just rotated) is no error: an empty report")
    func emptyLog() throws {
        let directory = try ScratchDirectory()
        let empty = try directory.write("atsproxy.log", "")
        let result = ATSProxyCtl.run(["report", empty])
        #expect(result.exitCode == 0, "\(result.standardError)")
        #expect(result.standardOutput.contains("Suggested NSAppTransportSecurity: none needed"))
    }

    static let interceptLog = repositoryRoot + "/Tests/ATSProxyCtlTests/Fixtures/har/intercept.log"

    @Test("request lines (intercept mode) are counted per host beside connections, in text and JSON")
    func requestCounts() throws {
        let text = ATSProxyCtl.run(["report", Self.interceptLog])
        #expect(text.exitCode == 0, "\(text.standardError)")
        #expect(
            text.standardOutput.hasPrefix(
                "1 log file, 2 connections, 2 requests, 2 hosts; 2 lines skipped (see the warnings)\n"))
        #expect(
            text.standardOutput.contains(
                """
                HOST                CONN  REQ  ALLOWED  BLOCKED  FAILED  VIOLATIONS  NEEDS
                api.example.com        1    2        1        0       0  -           nothing
                legacy.example.com     1    0        1        0       0  -           nothing

                """))
        let json = ATSProxyCtl.run(["report", Self.interceptLog, "--json"])
        let object = try #require(try jsonLines(json.standardOutput).first)
        let hosts = try #require(object["hosts"] as? [[String: Any]])
        #expect(
            hosts.map { "\($0["host"]!) \($0["connections"]!) \($0["requests"]!)" }
                == ["api.example.com 1 2", "legacy.example.com 1 0"])
        // A tunnel-mode log has no request lines: no REQ column, and 0 in JSON.
        #expect(!Self.run([]).standardOutput.contains(" REQ "))
        let tunnel = try #require(try Self.jsonReport()["hosts"] as? [[String: Any]])
        #expect(tunnel.allSatisfy { $0["requests"] as? Int == 0 })
    }

    @Test(
        "request lines change no count of connections and no verdict: the report without them is the same but for the counts"
    )
    func requestLinesChangeNoVerdict() throws {
        let scratch = try ScratchDirectory()
        let lines = try String(contentsOfFile: Self.interceptLog, encoding: .utf8).split(
            separator: "\n", omittingEmptySubsequences: false)
        // Request lines blanked, so the other lines keep their numbers.
        let stripped = lines.map { $0.contains(#""kind":"request""#) || $0.contains(#""kind":"tls_stream""#) ? "" : $0 }
        let without = try scratch.write("intercept.log", stripped.joined(separator: "\n"))
        func report(_ path: String) throws -> [String: Any] {
            let result = ATSProxyCtl.run(["report", path, "--json"])
            #expect(result.exitCode == 0)
            var object = try #require(try jsonLines(result.standardOutput).first)
            object["files"] = nil
            object["skipped"] = nil
            object["hosts"] = (object["hosts"] as? [[String: Any]])?.map { host in
                var host = host
                host["requests"] = nil
                return host
            }
            return object
        }
        let with = try report(Self.interceptLog)
        let plain = try report(without)
        #expect(NSDictionary(dictionary: with).isEqual(to: plain))
        #expect((with["hosts"] as? [[String: Any]])?.first?["connections"] as? Int == 1)
    }
}
