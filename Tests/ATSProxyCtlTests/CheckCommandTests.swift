import ATSProxyCtl
import Foundation
import Testing

@Suite("atsproxyctl check")
struct CheckCommandTests {
    @Test("a clean policy prints no findings and a summary, exit 0 even with --strict")
    func cleanPolicy() throws {
        let dir = try ScratchDirectory()
        let file = try dir.policy(
            """
            <key>NSExceptionDomains</key>
            <dict>
                <key>legacy.example.com</key>
                <dict>
                    <key>NSExceptionMinimumTLSVersion</key><string>TLSv1.0</string>
                </dict>
            </dict>
            """)
        let result = ctl("check", file, "--strict")
        #expect(result.exitCode == 0)
        #expect(result.standardOutput.contains("no findings"))
        #expect(
            result.standardOutput.contains(
                "legacy.example.com: HTTPS only; TLS 1.0 or later; forward secrecy required."))
        #expect(result.standardOutput.contains("URLSession loads to hosts without an exception: full ATS"))
    }

    /// docs/ats-rules.md, "The decisions" (`os_profile`): on iOS 26 neither a TLSv1.0 exception nor arbitrary loads
    /// bring TLS 1.0 back, and check must say so rather than describe either as allowing it.
    @Test("ios26: a TLSv1.0 exception is a finding that it has no effect; ATS-off hosts still need TLS 1.2")
    func ios26LegacyFloors() throws {
        let dir = try ScratchDirectory()
        let file = try dir.policy(
            """
            <key>NSAllowsArbitraryLoads</key><true/>
            <key>NSExceptionDomains</key>
            <dict>
                <key>legacy.example.com</key>
                <dict>
                    <key>NSExceptionMinimumTLSVersion</key><string>TLSv1.0</string>
                </dict>
            </dict>
            """)
        let result = ctl("check", file, "--os-profile", "ios26")
        #expect(
            result.standardOutput.contains("has no effect on the ios26 profile: iOS 26 refuses TLS 1.0 and 1.1"),
            "\(result.standardOutput)")
        #expect(
            result.standardOutput.contains(
                "legacy.example.com: HTTPS only; TLS 1.2 or later; forward secrecy required."))
        #expect(
            result.standardOutput.contains(
                "URLSession loads to hosts without an exception: ATS off (NSAllowsArbitraryLoads): cleartext HTTP allowed, "
                    + "default trust still applies, and iOS 26 still refuses TLS 1.0 and 1.1."))
        #expect(result.standardOutput.contains("iOS 26 still refuses TLS 1.0 and 1.1 for them."))
        let ios17 = ctl("check", file, "--os-profile", "ios17")
        #expect(!ios17.standardOutput.contains("refuses TLS 1.0"), "\(ios17.standardOutput)")
        #expect(
            ios17.standardOutput.contains("legacy.example.com: HTTPS only; TLS 1.0 or later; forward secrecy required.")
        )
    }

    /// Every kind of suspicious key the issue names, with the fix `check` must suggest.
    static let suspiciousKeys: [(label: String, xml: String, path: String, fix: String)] = [
        (
            "InMedia misspelling",
            "<key>NSAllowsArbitraryLoadsInMedia</key><true/>",
            "NSAllowsArbitraryLoadsInMedia", "NSAllowsArbitraryLoadsForMedia"
        ),
        (
            "third-party legacy key",
            "<key>NSExceptionDomains</key><dict><key>a.example.com</key><dict><key>NSThirdPartyExceptionAllowsInsecureHTTPLoads</key><true/></dict></dict>",
            "NSExceptionDomains[\"a.example.com\"].NSThirdPartyExceptionAllowsInsecureHTTPLoads",
            "NSExceptionAllowsInsecureHTTPLoads"
        ),
        (
            "temporary legacy key",
            "<key>NSExceptionDomains</key><dict><key>a.example.com</key><dict><key>NSTemporaryExceptionMinimumTLSVersion</key><string>TLSv1.0</string></dict></dict>",
            "NSExceptionDomains[\"a.example.com\"].NSTemporaryExceptionMinimumTLSVersion",
            "NSExceptionMinimumTLSVersion"
        ),
        (
            "wildcard domain key",
            "<key>NSExceptionDomains</key><dict><key>*.example.com</key><dict/></dict>",
            "NSExceptionDomains[\"*.example.com\"]", "example.com with NSIncludesSubdomains"
        ),
        (
            "port in domain key",
            "<key>NSExceptionDomains</key><dict><key>example.com:8443</key><dict/></dict>",
            "NSExceptionDomains[\"example.com:8443\"]", "write example.com"
        ),
        (
            "invalid TLS version string",
            "<key>NSExceptionDomains</key><dict><key>a.example.com</key><dict><key>NSExceptionMinimumTLSVersion</key><string>1.0</string></dict></dict>",
            "NSExceptionDomains[\"a.example.com\"].NSExceptionMinimumTLSVersion", "<string>TLSv1.0</string>"
        ),
        (
            "string YES for a boolean",
            "<key>NSAllowsArbitraryLoads</key><string>YES</string>",
            "NSAllowsArbitraryLoads", "<true/>"
        ),
        (
            "number for a TLS version",
            "<key>NSExceptionDomains</key><dict><key>a.example.com</key><dict><key>NSExceptionMinimumTLSVersion</key><real>1.2</real></dict></dict>",
            "NSExceptionDomains[\"a.example.com\"].NSExceptionMinimumTLSVersion", "<string>TLSv1.2</string>"
        ),
        (
            "upper-case domain key",
            "<key>NSExceptionDomains</key><dict><key>API.example.com</key><dict/></dict>",
            "NSExceptionDomains[\"API.example.com\"]", "write api.example.com"
        ),
        (
            "unknown key with a near miss",
            "<key>NSAllowArbitraryLoads</key><true/>",
            "NSAllowArbitraryLoads", "did you mean NSAllowsArbitraryLoads?"
        ),
        (
            "obsolete CT key",
            "<key>NSExceptionDomains</key><dict><key>a.example.com</key><dict><key>NSRequiresCertificateTransparency</key><true/></dict></dict>",
            "NSExceptionDomains[\"a.example.com\"].NSRequiresCertificateTransparency", "remove it"
        ),
        (
            "exception entry that is a string",
            "<key>NSExceptionDomains</key><dict><key>a.example.com</key><string></string></dict>",
            "NSExceptionDomains[\"a.example.com\"]", "<dict>"
        ),
    ]

    @Test("names each suspicious key with its key path and fix", arguments: suspiciousKeys)
    func suspiciousKey(_ row: (label: String, xml: String, path: String, fix: String)) throws {
        let dir = try ScratchDirectory()
        let file = try dir.policy(row.xml)
        let text = ctl("check", file)
        #expect(text.exitCode == 0, "\(row.label): \(text.standardError)")
        #expect(text.standardOutput.contains(row.path), "\(row.label)")
        #expect(text.standardOutput.contains(row.fix), "\(row.label)")

        let json = ctl("check", file, "--json", "--strict")
        #expect(json.exitCode == 1, "\(row.label): --strict exits 1 when there are findings")
        let report = try #require(try jsonLines(json.standardOutput).first)
        #expect(report["ok"] as? Bool == false)
        let findings = try #require(report["findings"] as? [[String: Any]])
        let finding = try #require(
            findings.first { ($0["path"] as? String)?.hasSuffix(row.path) == true }, "\(row.label)")
        #expect(["error", "warning"].contains(finding["severity"] as? String))
        #expect((finding["message"] as? String)?.isEmpty == false)
        #expect((finding["fix"] as? String)?.contains(row.fix) == true, "\(row.label)")
    }

    @Test("JSON report has ok, findings with severity/path/message, and a summary")
    func jsonContract() throws {
        let dir = try ScratchDirectory()
        let file = try dir.policy("<key>NSAllowsArbitraryLoads</key><true/><key>NSAllowsLocalNetworking</key><false/>")
        let result = ctl("check", file, "--json")
        #expect(result.exitCode == 0)
        let report = try #require(try jsonLines(result.standardOutput).first)
        #expect(report["ok"] as? Bool == false)
        let findings = try #require(report["findings"] as? [[String: Any]])
        let cancelled = try #require(findings.first { $0["code"] as? String == "arbitrary_loads_cancelled" })
        #expect(cancelled["severity"] as? String == "warning")
        #expect(cancelled["path"] as? String == "NSAllowsArbitraryLoads")
        let summary = try #require(report["summary"] as? [String: Any])
        let text = try #require(summary["text"] as? [String])
        #expect(text.contains { $0.contains("NSAllowsArbitraryLoads only affects iOS 9") })
    }

    @Test("an Info.plist's findings carry the NSAppTransportSecurity prefix and a line number")
    func infoPlistPaths() throws {
        let dir = try ScratchDirectory()
        let file = try dir.write(
            "Info.plist",
            plistDocument(
                """
                <key>CFBundleIdentifier</key><string>com.example.app</string>
                <key>NSAppTransportSecurity</key>
                <dict>
                    <key>NSExceptionDomains</key>
                    <dict>
                        <key>a.example.com</key>
                        <dict>
                            <key>NSIncludesSubdomains</key><string>YES</string>
                        </dict>
                    </dict>
                </dict>
                """))
        let result = ctl("check", file, "--json")
        let report = try #require(try jsonLines(result.standardOutput).first)
        let findings = try #require(report["findings"] as? [[String: Any]])
        let finding = try #require(findings.first)
        #expect(
            finding["path"] as? String
                == "NSAppTransportSecurity.NSExceptionDomains[\"a.example.com\"].NSIncludesSubdomains")
        #expect(finding["line"] as? Int == 12)
        let human = ctl("check", file)
        #expect(human.standardOutput.contains("\(file):12:"))
    }

    @Test("a missing file exits 2 and names the file")
    func missingFile() {
        let result = ctl("check", "/nonexistent/policy.plist")
        #expect(result.exitCode == 2)
        #expect(result.standardError.contains("/nonexistent/policy.plist: no such file"))
    }

    @Test("a directory exits 2 and says so")
    func directory() throws {
        let dir = try ScratchDirectory()
        let result = ctl("check", dir.path)
        #expect(result.exitCode == 2)
        #expect(result.standardError.contains("\(dir.path): is a directory"))
    }

    @Test("a device or FIFO is refused without reading it")
    func notRegular() {
        let result = ctl("check", "/dev/null")
        #expect(result.exitCode == 2)
        #expect(result.standardError.contains("/dev/null: is not a regular file"))
    }

    @Test("a file that is not a plist exits 2 with the file, the line and the reason")
    func notAPlist() throws {
        let dir = try ScratchDirectory()
        let file = try dir.write(
            "broken.plist", "<plist version=\"1.0\">\n<dict>\n<key>NSAllowsArbitraryLoads</key>\n<true/>\n</plist>\n")
        let result = ctl("check", file)
        #expect(result.exitCode == 2)
        #expect(result.standardError.contains("\(file): line 5"))
        #expect(result.standardError.contains("not a property list"))
        let json = ctl("check", file, "--json")
        #expect(json.exitCode == 2)
        let report = try #require(try jsonLines(json.standardOutput).first)
        #expect(report["ok"] as? Bool == false)
        let error = try #require(report["error"] as? [String: Any])
        #expect(error["code"] as? String == "not_a_plist")
    }

    @Test(
        "a root that is not a dictionary, or a non-dictionary NSAppTransportSecurity, exits 2",
        arguments: [
            "<?xml version=\"1.0\"?><plist version=\"1.0\"><array/></plist>",
            "<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>NSAppTransportSecurity</key><true/></dict></plist>",
        ])
    func notADictionary(_ contents: String) throws {
        let dir = try ScratchDirectory()
        let file = try dir.write("p.plist", contents)
        let result = ctl("check", file)
        #expect(result.exitCode == 2)
        #expect(result.standardError.contains(file))
        #expect(result.standardError.contains("not a dictionary"))
    }

    @Test("binary plists are read like XML ones")
    func binaryPlist() throws {
        let fixture = repositoryRoot + "/Tests/ATSPolicyTests/Fixtures/plist/app-info.bplist"
        let result = ctl("check", fixture, "--json")
        #expect(result.exitCode == 0)
        let report = try #require(try jsonLines(result.standardOutput).first)
        #expect(report["format"] as? String == "binary")
    }

    @Test(
        "every example policy in config/ checks clean",
        arguments: [
            "ats-defaults.plist", "exception-domains.plist", "web-content-only.plist", "pinned-domains.plist",
            "local-development.plist",
        ])
    func examplePolicies(_ name: String) {
        let result = ctl("check", repositoryRoot + "/config/" + name, "--strict")
        #expect(result.exitCode == 0, "\(name): \(result.standardOutput)")
    }

    @Test("usage errors exit 2 and say what is wrong")
    func usageError() {
        let result = ctl("check")
        #expect(result.exitCode == 2)
        #expect(result.standardError.contains("Missing expected argument"))
        let badProfile = ctl("check", "x.plist", "--os-profile", "ios99")
        #expect(badProfile.exitCode == 2)
        #expect(badProfile.standardError.contains("ios99"))
    }
}
