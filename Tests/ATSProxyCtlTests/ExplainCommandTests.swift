import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

@Suite("atsproxyctl explain")
struct ExplainCommandTests {
    static let policyXML = """
        <key>NSAllowsArbitraryLoads</key><true/>
        <key>NSExceptionDomains</key>
        <dict>
            <key>example.com</key>
            <dict>
                <key>NSIncludesSubdomains</key><true/>
                <key>NSExceptionMinimumTLSVersion</key><string>TLSv1.1</string>
                <key>NSExceptionRequiresForwardSecrecy</key><false/>
            </dict>
            <key>strict.example.com</key>
            <dict/>
            <key>198.51.100.0/24</key>
            <dict><key>NSExceptionAllowsInsecureHTTPLoads</key><true/></dict>
        </dict>
        <key>NSPinnedDomains</key>
        <dict>
            <key>pinned.example.org</key>
            <dict>
                <key>NSPinnedLeafIdentities</key>
                <array><dict><key>SPKI-SHA256-BASE64</key><string>C5+lpZ7tcVwmwQIMcRtPbsQtWLABXhQzejna0wHFr8M=</string></dict></array>
            </dict>
        </dict>
        """

    /// host, scheme, expected rule kind and key, cleartext, floor, forward secrecy.
    static let rows: [(String, String, String, String?, Bool, String?, Bool)] = [
        ("api.example.com", "https", "exception", "example.com", false, "TLSv1.1", false),
        ("strict.example.com", "http", "exception", "strict.example.com", false, "TLSv1.2", true),
        ("other.org", "http", "arbitrary_loads", "NSAllowsArbitraryLoads", true, nil, false),
        ("198.51.100.7", "http", "exception", "198.51.100.0/24", true, "TLSv1.2", true),
        ("localhost", "http", "local", nil, true, nil, false),
        ("[::1]", "https", "local", nil, true, nil, false),
    ]

    @Test("--json prints one object per host with the contract's fields")
    func jsonLinesPerHost() throws {
        let dir = try ScratchDirectory()
        let file = try dir.policy(Self.policyXML)
        for row in Self.rows {
            let result = ctl("explain", "--policy", file, "--scheme", row.1, row.0, "--json")
            #expect(result.exitCode == 0, "\(row.0): \(result.standardError)")
            let object = try #require(try jsonLines(result.standardOutput).first)
            #expect(object["scheme"] as? String == row.1)
            let rule = try #require(object["rule"] as? [String: Any])
            #expect(rule["kind"] as? String == row.2, "\(row.0)")
            #expect(rule["key"] as? String == row.3, "\(row.0)")
            #expect(object["cleartext_allowed"] as? Bool == row.4, "\(row.0)")
            #expect(object["min_tls_version"] as? String == row.5, "\(row.0)")
            #expect(object["requires_forward_secrecy"] as? Bool == row.6, "\(row.0)")
            #expect(object.keys.contains("pins"))
        }
    }

    @Test("several hosts give several lines, in order; pins are reported")
    func severalHosts() throws {
        let dir = try ScratchDirectory()
        let file = try dir.policy(Self.policyXML)
        let result = ctl("explain", "--policy", file, "pinned.example.org", "a.example.com", "--json")
        let objects = try jsonLines(result.standardOutput)
        #expect(objects.count == 2)
        #expect(objects[0]["host"] as? String == "pinned.example.org")
        let pins = try #require(objects[0]["pins"] as? [String: Any])
        #expect(pins["leaf"] as? [String] == ["C5+lpZ7tcVwmwQIMcRtPbsQtWLABXhQzejna0wHFr8M="])
        #expect(objects[1]["pins"] is NSNull)
    }

    @Test("a URL argument carries its scheme and loses its port and path")
    func urlArgument() throws {
        let dir = try ScratchDirectory()
        let file = try dir.policy(Self.policyXML)
        let result = ctl("explain", "--policy", file, "http://API.Example.com:8080/v1/items?x=1", "--json")
        let object = try #require(try jsonLines(result.standardOutput).first)
        #expect(object["host"] as? String == "api.example.com")
        #expect(object["scheme"] as? String == "http")
    }

    @Test("--client webkit and media change the global decision")
    func clientClasses() throws {
        let dir = try ScratchDirectory()
        let file = try dir.policy("<key>NSAllowsArbitraryLoadsInWebContent</key><true/>")
        let web = try #require(
            try jsonLines(ctl("explain", "--policy", file, "--client", "webkit", "a.com", "--json").standardOutput)
                .first)
        let session = try #require(
            try jsonLines(ctl("explain", "--policy", file, "a.com", "--json").standardOutput).first)
        #expect((web["rule"] as? [String: Any])?["kind"] as? String == "arbitrary_loads")
        #expect((session["rule"] as? [String: Any])?["kind"] as? String == "default")
    }

    @Test("--os-profile changes the answer for IP addresses")
    func osProfile() throws {
        let dir = try ScratchDirectory()
        let file = try dir.policy("")
        let ios17 = try #require(
            try jsonLines(ctl("explain", "--policy", file, "--scheme", "http", "203.0.113.5", "--json").standardOutput)
                .first)
        let ios10 = try #require(
            try jsonLines(
                ctl("explain", "--policy", file, "--os-profile", "ios10", "--scheme", "http", "203.0.113.5", "--json")
                    .standardOutput
            ).first)
        #expect(ios17["cleartext_allowed"] as? Bool == false)
        #expect(ios10["cleartext_allowed"] as? Bool == true)
    }

    /// docs/ats-rules.md, "The decisions" (`os_profile`): iOS 26 keeps TLS 1.2 as the floor where ATS is off too, so
    /// explain must not read "ATS minimums do not apply" as "TLS 1.0 passes" there.
    @Test("ios26: where ATS is off the text still gives a TLS 1.2 floor, and says why; ios17 does not")
    func ios26FloorWithATSOff() throws {
        let dir = try ScratchDirectory()
        let file = try dir.policy(Self.policyXML)
        let ios26 = ctl("explain", "--policy", file, "--os-profile", "ios26", "other.org", "api.example.com")
        #expect(ios26.exitCode == 0)
        #expect(
            ios26.standardOutput.contains(
                "  ATS minimums:      do not apply (default trust evaluation still does)\n"
                    + "  minimum TLS:       TLSv1.2 (iOS 26 refuses TLS 1.0 and 1.1 for every load)\n"),
            "\(ios26.standardOutput)")
        #expect(
            ios26.standardOutput.contains(
                "iOS 26 refuses TLS 1.0 and 1.1 for every load: TLS 1.2 or later even with ATS off"))
        // The TLSv1.1 exception for example.com has no effect there.
        #expect(ios26.standardOutput.contains("iOS 26 ignores the TLSv1.1 exception: the floor stays at TLSv1.2"))
        let ios17 = ctl("explain", "--policy", file, "--os-profile", "ios17", "other.org")
        #expect(!ios17.standardOutput.contains("minimum TLS:"), "\(ios17.standardOutput)")
    }

    @Test("the text form names the rule and the reasons")
    func textForm() throws {
        let dir = try ScratchDirectory()
        let file = try dir.policy(Self.policyXML)
        let result = ctl("explain", "--policy", file, "deep.api.example.com")
        #expect(result.exitCode == 0)
        #expect(result.standardOutput.contains("rule:              exception (example.com)"))
        #expect(result.standardOutput.contains("minimum TLS:       TLSv1.1"))
        #expect(result.standardOutput.contains("NSExceptionDomains \"example.com\" matches as a subdomain"))
    }

    @Test("a malformed host exits 2 and the other hosts are still explained")
    func badHost() throws {
        let dir = try ScratchDirectory()
        let file = try dir.policy(Self.policyXML)
        let result = ctl("explain", "--policy", file, "bad host!", "example.com", "--json")
        #expect(result.exitCode == 2)
        #expect(result.standardError.contains("host \"bad host!\""))
        #expect(try jsonLines(result.standardOutput).count == 1)
    }

    @Test(
        "bad ports and empty labels are refused",
        arguments: ["[::1]:99999999999", "[::1]:", "a.com:0", "a.com:65536", ".", "a..com"])
    func badHostForms(_ host: String) throws {
        let dir = try ScratchDirectory()
        let file = try dir.policy("")
        let result = ctl("explain", "--policy", file, host)
        #expect(result.exitCode == 2, "\(host)")
        #expect(result.standardError.contains("host \"\(host)\""))
    }

    @Test("--local-network adds to loopback and link-local")
    func localNetworksAdd() throws {
        let dir = try ScratchDirectory()
        let file = try dir.policy("")
        let args = ["explain", "--policy", file, "--scheme", "http", "--local-network", "private", "--json"]
        for (host, local) in [("127.0.0.1", true), ("192.168.1.10", true), ("203.0.113.1", false)] {
            let object = try #require(try jsonLines(ATSProxyCtl.run(args + [host]).standardOutput).first)
            #expect(object["cleartext_allowed"] as? Bool == local, "\(host)")
        }
    }

    @Test("a policy that does not load exits 2 naming the file")
    func badPolicy() {
        let result = ctl("explain", "--policy", "/nonexistent.plist", "example.com")
        #expect(result.exitCode == 2)
        #expect(result.standardError.contains("/nonexistent.plist: no such file"))
    }

    @Test("findings in the policy are pointed out on stderr")
    func findingsNote() throws {
        let dir = try ScratchDirectory()
        let file = try dir.policy("<key>NSAllowsArbitraryLoads</key><string>YES</string>")
        let result = ctl("explain", "--policy", file, "example.com")
        #expect(result.exitCode == 0)
        #expect(result.standardError.contains("atsproxyctl check"))
    }
}

/// What `explain` says beyond the rule: the port it was asked about, the policy's ignored keys that
/// bear on the answer, and that pins play no part in an http:// load. Each case runs on the XML
/// policy and on a binary copy of it.
@Suite("atsproxyctl explain: what surprised answers come from")
struct ExplainIgnoredKeysTests {
    /// An app's Info.plist as Xcode writes it, with the mistakes real ones have.
    static let infoPlist = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
        <dict>
        \t<key>CFBundleIdentifier</key>
        \t<string>com.example.shop</string>
        \t<key>NSAppTransportSecurity</key>
        \t<dict>
        \t\t<key>NSExceptionDomains</key>
        \t\t<dict>
        \t\t\t<!-- the staging API runs on 8443 -->
        \t\t\t<key>staging.example.com:8443</key>
        \t\t\t<dict>
        \t\t\t\t<key>NSExceptionAllowsInsecureHTTPLoads</key>
        \t\t\t\t<true/>
        \t\t\t</dict>
        \t\t\t<key>example.com</key>
        \t\t\t<dict>
        \t\t\t\t<key>NSIncludesSubdomain</key>
        \t\t\t\t<true/>
        \t\t\t\t<key>NSExceptionAllowsInsecureHTTPLoad</key>
        \t\t\t\t<true/>
        \t\t\t</dict>
        \t\t\t<key>*.cdn.example.net</key>
        \t\t\t<dict>
        \t\t\t\t<key>NSExceptionMinimumTLSVersion</key>
        \t\t\t\t<string>TLSv1.0</string>
        \t\t\t</dict>
        \t\t</dict>
        \t\t<key>NSPinnedDomains</key>
        \t\t<dict>
        \t\t\t<key>pay.example.org</key>
        \t\t\t<dict>
        \t\t\t\t<key>NSPinnedLeafIdentities</key>
        \t\t\t\t<array>
        \t\t\t\t\t<dict>
        \t\t\t\t\t\t<key>SPKI-SHA256-BASE64</key>
        \t\t\t\t\t\t<string>C5+lpZ7tcVwmwQIMcRtPbsQtWLABXhQzejna0wHFr8M=</string>
        \t\t\t\t\t</dict>
        \t\t\t\t</array>
        \t\t\t</dict>
        \t\t</dict>
        \t</dict>
        </dict>
        </plist>
        """

    struct Case: CustomTestStringConvertible, Sendable {
        let host: String
        let port: Int?
        /// The findings' paths the answer names, in order.
        let ignored: [String]
        let pinned: Bool
        var testDescription: String { host }
    }

    static let cases = [
        // Written with a port, the key never matches: the load is blocked and the key is named, and
        // so is the parent's misspelt NSIncludesSubdomains, the other way it could have been covered.
        Case(
            host: "http://staging.example.com:8443/v2/cart", port: 8443,
            ignored: [
                #"NSAppTransportSecurity.NSExceptionDomains["example.com"].NSIncludesSubdomain"#,
                #"NSAppTransportSecurity.NSExceptionDomains["staging.example.com:8443"]"#,
            ], pinned: false),
        // The entry decides, but its keys are misspelt: both named.
        Case(
            host: "http://example.com/", port: nil,
            ignored: [
                #"NSAppTransportSecurity.NSExceptionDomains["example.com"].NSExceptionAllowsInsecureHTTPLoad"#,
                #"NSAppTransportSecurity.NSExceptionDomains["example.com"].NSIncludesSubdomain"#,
            ],
            pinned: false),
        // The parent's misspelt NSIncludesSubdomains is why its entry does not cover the host; its
        // other mistake has nothing to do with this host.
        Case(
            host: "http://shop.example.com/", port: nil,
            ignored: [#"NSAppTransportSecurity.NSExceptionDomains["example.com"].NSIncludesSubdomain"#], pinned: false),
        // A wildcard key was meant for the subdomains.
        Case(
            host: "img.cdn.example.net", port: nil,
            ignored: [#"NSAppTransportSecurity.NSExceptionDomains["*.cdn.example.net"]"#], pinned: false),
        // Nothing in the policy bears on an unrelated host.
        Case(host: "api.other.net", port: nil, ignored: [], pinned: false),
        // Pins apply over TLS only.
        Case(host: "https://pay.example.org/", port: nil, ignored: [], pinned: true),
        Case(host: "http://pay.example.org/", port: nil, ignored: [], pinned: false),
    ]

    static func policyFiles(in dir: ScratchDirectory) throws -> [String] {
        let xml = try dir.write("Info.plist", infoPlist)
        let binary = dir.path + "/Info.bplist"
        let converted = try runCommand(
            "/usr/bin/python3",
            [
                "-c",
                "import plistlib, sys; plistlib.dump(plistlib.load(open(sys.argv[1], 'rb')), open(sys.argv[2], 'wb'), fmt=plistlib.FMT_BINARY)",
                xml, binary,
            ])
        try #require(converted.status == 0, "\(converted.standardError)")
        return [xml, binary]
    }

    @Test("the JSON answer carries the port and exactly the findings that bear on the host", arguments: cases)
    func json(_ row: Case) throws {
        let dir = try ScratchDirectory()
        for file in try Self.policyFiles(in: dir) {
            let result = ctl("explain", "--policy", file, row.host, "--json")
            #expect(result.exitCode == 0, "\(file): \(result.standardError)")
            let answer = try #require(try jsonLines(result.standardOutput).first)
            #expect(answer["port"] as? Int == row.port, "\(file)")
            let ignored = try #require(answer["ignored_keys"] as? [[String: Any]], "\(file)")
            #expect(ignored.compactMap { $0["path"] as? String } == row.ignored, "\(file)")
            // Lines only where the file has them.
            #expect(ignored.allSatisfy { ($0["line"] != nil) == file.hasSuffix(".plist") }, "\(file)")
            #expect((answer["pins"] is NSNull) == !row.pinned, "\(file)")
        }
    }

    @Test("the text answer shows the port in its first line and names each ignored key with its line", arguments: cases)
    func text(_ row: Case) throws {
        let dir = try ScratchDirectory()
        let file = try Self.policyFiles(in: dir)[0]
        let result = ctl("explain", "--policy", file, row.host)
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        let header = try #require(lines.first)
        #expect(header.contains(row.port.map { ":\($0) (client" } ?? " (client"), "\(header)")
        #expect(lines.contains { $0.hasPrefix("    - the port plays no part") } == (row.port != nil))
        let named = lines.filter { $0.hasPrefix("    - ignored in the policy, line ") }
        #expect(named.count == row.ignored.count, "\(result.standardOutput)")
        for (line, path) in zip(named, row.ignored) { #expect(line.contains(path), "\(line)") }
        if row.host.hasPrefix("http://pay.") {
            #expect(lines.contains("  pins:              do not apply to http://"))
            #expect(lines.contains("    - NSPinnedDomains does not apply to http:// loads: there is no TLS to pin"))
        }
    }
}

@Suite("atsproxyctl explain --json: the OS's own TLS floor")
struct ExplainOSFloorTests {
    @Test(
        "os_min_tls_version is TLSv1.2 on ios26 and TLSv1.0 before, where ATS applies and where it does not",
        arguments: [("ios26", "TLSv1.2"), ("ios17", "TLSv1.0"), ("ios9", "TLSv1.0")])
    func osFloor(_ profile: String, _ floor: String) throws {
        let dir = try ScratchDirectory()
        let file = try dir.policy("<key>NSAllowsArbitraryLoads</key><true/>")
        for host in ["api.example.com", "localhost"] {
            let result = ctl("explain", "--policy", file, "--os-profile", profile, host, "--json")
            let answer = try #require(try jsonLines(result.standardOutput).first)
            #expect(answer["os_min_tls_version"] as? String == floor, "\(profile) \(host)")
            #expect(
                answer["ats_applies"] as? Bool == false, "\(profile) \(host): arbitrary loads or the local exemption")
        }
    }
}
