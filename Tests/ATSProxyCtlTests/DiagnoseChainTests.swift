import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing
import TextFormats

/// `atsproxyctl diagnose --chain`: real certificates, made by the test with openssl, judged without a
/// server as Apple's trust code judges them (docs/ats-rules.md, "Default trust"), through the same path
/// building as the proxy's verdicts. One row per rule edge of Apple's code, for each kind of anchor.
@Suite("diagnose --chain: certificates judged without a server", .startsProcesses(timeLimit: .seconds(120)))
struct DiagnoseChainTests {
    static let day: TimeInterval = 86_400
    static func date(_ text: String) -> Date {
        Date(timeIntervalSince1970: TimeInterval(DateFormat.parseRFC3339(text)!))
    }

    /// The kind of anchor the chain's root is given as.
    enum Anchor: String, CaseIterable, Sendable {
        case system, user, app

        func arguments(_ file: String) -> [String] {
            switch self {
            case .system: ["--system-anchor", file]
            case .user: ["--ca-file", file]
            case .app: ["--app-anchor", file]
            }
        }
    }

    /// The JSON document of `diagnose --chain` for `files` in `factory`'s directory, with the OS store off.
    static func judge(
        _ factory: CertificateFactory, _ files: [String], _ extra: [String], expectStatus: Int32? = nil,
        sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) throws -> (names: [String], json: JSONValue, status: Int32) {
        let arguments =
            ["diagnose", "--chain"] + files.map { factory.path($0) } + ["--system-roots", "off", "--json"] + extra
        let result = ATSProxyCtl.run(arguments)
        let json = try #require(
            try? JSONValue(parsing: result.standardOutput), "\(result.standardError)",
            sourceLocation: sourceLocation)
        let names = json["policy"]?["violations"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(result.exitCode == (names.isEmpty ? 0 : 1), "\(names)", sourceLocation: sourceLocation)
        if let expectStatus { #expect(result.exitCode == expectStatus, sourceLocation: sourceLocation) }
        return (names, json, result.exitCode)
    }

    // MARK: - Validity caps

    struct CapRow: Sendable, CustomTestStringConvertible {
        let label: String
        let anchor: Anchor
        let seconds: TimeInterval
        let tooLong: Bool
        var testDescription: String { label }
    }

    static let capRows = [
        CapRow(label: "system root, exactly 398 days", anchor: .system, seconds: 398 * day, tooLong: false),
        CapRow(label: "system root, 398 days + 1 s", anchor: .system, seconds: 398 * day + 1, tooLong: true),
        CapRow(label: "user root, 825 days + 1 h", anchor: .user, seconds: 825 * day + 3600, tooLong: false),
        CapRow(label: "user root, 825 days + 1 h + 1 s", anchor: .user, seconds: 825 * day + 3601, tooLong: true),
        CapRow(label: "app anchor, 825 days + 1 h", anchor: .app, seconds: 825 * day + 3600, tooLong: false),
        CapRow(label: "app anchor, 825 days + 1 h + 1 s", anchor: .app, seconds: 825 * day + 3601, tooLong: true),
    ]

    @Test("validity caps, to the second, by kind of anchor", arguments: capRows)
    func validityCap(row: CapRow) throws {
        let factory = try CertificateFactory()
        try factory.rootCA("root")
        // From a day ago (whole seconds), judged tomorrow: the root, made now, is valid then too.
        let start = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - Self.day).rounded(.down))
        try factory.certificate(
            "leaf", issuer: "root", notBefore: start, notAfter: start + row.seconds,
            extensions: ["subjectAltName=DNS:api.example.test", "extendedKeyUsage=serverAuth"])
        let tomorrow = DateFormat.rfc3339(Int64(start.timeIntervalSince1970) + 2 * 86_400)
        let result = try Self.judge(
            factory, ["leaf.pem"],
            row.anchor.arguments(factory.path("root.pem")) + ["--date", tomorrow, "--ct", "off"])
        #expect(result.names == (row.tooLong ? ["validity_too_long"] : []))
    }

    // MARK: - EKU

    struct EKURow: Sendable, CustomTestStringConvertible {
        let anchor: Anchor
        /// The leaf's extendedKeyUsage line, or nil for no extension.
        let eku: String?
        let fails: Bool
        var testDescription: String { "\(anchor.rawValue) anchor, \(eku ?? "no EKU")" }
    }

    static let ekuRows: [EKURow] = [
        EKURow(anchor: .system, eku: nil, fails: true),
        EKURow(anchor: .system, eku: "anyExtendedKeyUsage", fails: true),
        EKURow(anchor: .system, eku: "clientAuth", fails: true),
        EKURow(anchor: .system, eku: "serverAuth", fails: false),
        EKURow(anchor: .user, eku: nil, fails: false),
        EKURow(anchor: .user, eku: "anyExtendedKeyUsage", fails: false),
        EKURow(anchor: .user, eku: "clientAuth", fails: true),
        EKURow(anchor: .app, eku: nil, fails: true),
        EKURow(anchor: .app, eku: "anyExtendedKeyUsage", fails: true),
        EKURow(anchor: .app, eku: "clientAuth", fails: true),
        EKURow(anchor: .app, eku: "serverAuth", fails: false),
    ]

    @Test("the serverAuth EKU under each kind of anchor", arguments: ekuRows)
    func extendedKeyUsage(row: EKURow) throws {
        let factory = try CertificateFactory()
        try factory.rootCA("root")
        try factory.certificate(
            "leaf", issuer: "root",
            extensions: ["subjectAltName=DNS:api.example.test"] + (row.eku.map { ["extendedKeyUsage=\($0)"] } ?? []))
        let result = try Self.judge(
            factory, ["leaf.pem"], row.anchor.arguments(factory.path("root.pem")) + ["--ct", "off"])
        #expect(result.names == (row.fails ? ["no_serverauth_eku"] : []))
    }

    @Test("an S/MIME-only intermediate fails under every kind of anchor", arguments: Anchor.allCases)
    func smimeIntermediate(anchor: Anchor) throws {
        let factory = try CertificateFactory()
        try factory.rootCA("root")
        try factory.certificate("inter", issuer: "root", extensions: ["extendedKeyUsage=emailProtection"], isCA: true)
        try factory.certificate(
            "leaf", issuer: "inter", extensions: ["subjectAltName=DNS:api.example.test", "extendedKeyUsage=serverAuth"])
        let result = try Self.judge(
            factory, ["leaf.pem", "inter.pem"], anchor.arguments(factory.path("root.pem")) + ["--ct", "off"])
        #expect(result.names == ["no_serverauth_eku"])
        let explanation = result.json["policy"]?["details"]?.arrayValue?.first?["explanation"]?.stringValue ?? ""
        #expect(explanation.contains("CN=inter"), "\(explanation)")
    }

    // MARK: - Names

    @Test(
        "names: no wildcard over an ICANN public suffix, no trailing dot stripped from a SAN",
        arguments: [
            ("DNS:*.co.uk", "apple.co.uk", false), ("DNS:*.example.co.uk", "www.example.co.uk", true),
            ("DNS:*.googleapis.com", "storage.googleapis.com", true), ("DNS:test.apple.com.", "test.apple.com", false),
            ("DNS:test.apple.com", "test.apple.com.", true),
        ])
    func names(san: String, host: String, matches: Bool) throws {
        let factory = try CertificateFactory()
        try factory.rootCA("root")
        try factory.certificate(
            "leaf", issuer: "root", extensions: ["subjectAltName=\(san)", "extendedKeyUsage=serverAuth"])
        let result = try Self.judge(
            factory, ["leaf.pem"], ["--ca-file", factory.path("root.pem"), "--host", host])
        #expect(result.names == (matches ? [] : ["name_mismatch"]))
    }

    // MARK: - Leaves trusted directly

    @Test(
        "a self-signed SHA-1 leaf and an RSA-1024 leaf, each trusted directly by the user or the app, pass",
        arguments: [("sha1", "rsa:2048"), ("sha256", "rsa:1024")], ["--ca-file", "--app-anchor"])
    func directlyTrustedLeaf(digest: (String, String), flag: String) throws {
        let factory = try CertificateFactory()
        try factory.key("leaf", digest.1)
        try factory.openssl(
            [
                "req", "-x509", "-new", "-key", "leaf.key", "-\(digest.0)", "-days", "3000", "-subj", "/CN=leaf",
                "-addext", "subjectAltName=DNS:device.local.test", "-addext", "extendedKeyUsage=serverAuth",
                "-addext", "basicConstraints=critical,CA:FALSE", "-out", "leaf.pem",
            ])
        let trusted = try Self.judge(factory, ["leaf.pem"], [flag, factory.path("leaf.pem")])
        #expect(trusted.names == [])
        // Not trusted directly, the same leaf is untrusted, and nothing else is said of it.
        let untrusted = try Self.judge(factory, ["leaf.pem"], [])
        #expect(untrusted.names.contains("untrusted_chain"), "\(untrusted.names)")
        #expect(!untrusted.names.contains("sig_hash_leaf"))
    }

    @Test("an intermediate given as the app's anchor ends the path there: the root is not needed")
    func intermediateAsAnchor() throws {
        let factory = try CertificateFactory()
        try factory.rootCA("root")
        try factory.certificate("inter", issuer: "root", extensions: [], isCA: true)
        try factory.certificate(
            "leaf", issuer: "inter", extensions: ["subjectAltName=DNS:api.example.test", "extendedKeyUsage=serverAuth"])
        let result = try Self.judge(factory, ["leaf.pem"], ["--app-anchor", factory.path("inter.pem")])
        #expect(result.names == [])
        #expect(result.json["server"]?["trust"]?.stringValue == "app_anchor")
        let subjects = result.json["server"]?["chain"]?.arrayValue?.compactMap { $0["subject"]?.stringValue }
        #expect(subjects == ["CN=leaf", "CN=inter"])
    }

    // MARK: - Certificate Transparency

    /// An embedded SCT list of `count` SCTs, as an openssl extension line: the SCTs are well formed but
    /// their signatures are not checked without a log list, as on a device with none.
    static func embeddedSCTs(_ count: Int) -> String {
        var list: [UInt8] = []
        for index in 0..<count {
            var sct: [UInt8] = [0]  // v1
            sct += [UInt8](repeating: UInt8(index + 1), count: 32)  // log id
            sct += [0, 0, 1, 0x78, 0xF0, 0, 0, 0]  // timestamp (ms)
            sct += [0, 0]  // no extensions
            sct += [4, 3, 0, 8] + [UInt8](repeating: 0xAB, count: 8)  // SHA-256/ECDSA, an 8-byte signature
            list += [UInt8(sct.count >> 8), UInt8(sct.count & 0xFF)] + sct
        }
        let whole = [UInt8(list.count >> 8), UInt8(list.count & 0xFF)] + list
        return "1.3.6.1.4.1.11129.2.4.2=ASN1:FORMAT:HEX,OCTETSTRING:"
            + whole.map { String(format: "%02X", $0) }.joined()
    }

    @Test(
        "CT on both sides of 2021-04-21: a 14-month leaf with 2 embedded SCTs passes the old table and fails the new",
        arguments: [("2021-04-20T00:00:00Z", false), ("2021-04-21T00:00:00Z", true)])
    func certificateTransparency(issued: String, fails: Bool) throws {
        let factory = try CertificateFactory()
        try factory.rootCA("root")
        let start = Self.date(issued)
        try factory.certificate(
            "leaf", issuer: "root", notBefore: start, notAfter: start + 420 * Self.day,
            extensions: [
                "subjectAltName=DNS:api.example.test", "extendedKeyUsage=serverAuth", Self.embeddedSCTs(2),
            ])
        let date = DateFormat.rfc3339(Int64(start.timeIntervalSince1970) + 86_400)
        let result = try Self.judge(
            factory, ["leaf.pem"], ["--system-anchor", factory.path("root.pem"), "--date", date])
        // The root, made now, is not yet valid at that date: only CT is asserted here.
        #expect(result.names.contains("ct") == fails, "\(result.names)")
        // Under a user root the same leaf needs no SCTs at all.
        let user = try Self.judge(factory, ["leaf.pem"], ["--ca-file", factory.path("root.pem"), "--date", date])
        #expect(!user.names.contains("ct"))
    }

    @Test("with a log list the SCTs' signatures are verified by OpenSSL: forged ones do not count, counted ones do")
    func logList() throws {
        let factory = try CertificateFactory()
        try factory.rootCA("root")
        try factory.certificate(
            "leaf", issuer: "root",
            extensions: ["subjectAltName=DNS:api.example.test", "extendedKeyUsage=serverAuth", Self.embeddedSCTs(2)])
        // Two logs of two operators, with the ids the forged SCTs name and keys of their own.
        try factory.key("log1", "ec:P-256")
        try factory.key("log2", "ec:P-256")
        func spki(_ name: String) throws -> String {
            try factory.openssl(["pkey", "-in", "\(name).key", "-pubout", "-outform", "DER"]).base64EncodedString()
        }
        func id(_ byte: UInt8) -> String { Data(repeating: byte, count: 32).base64EncodedString() }
        let list = """
            {"version": "1", "operators": [
              {"name": "Operator One", "logs": [{"description": "Log One", "log_id": "\(id(1))", "key": "\(try spki("log1"))",
                "state": {"usable": {"timestamp": "2020-01-01T00:00:00Z"}}}]},
              {"name": "Operator Two", "logs": [{"description": "Log Two", "log_id": "\(id(2))", "key": "\(try spki("log2"))",
                "state": {"usable": {"timestamp": "2020-01-01T00:00:00Z"}}}]}]}
            """
        try list.write(toFile: factory.path("log_list.json"), atomically: true, encoding: .utf8)
        let anchors = ["--system-anchor", factory.path("root.pem")]
        let counted = try Self.judge(factory, ["leaf.pem"], anchors)
        #expect(!counted.names.contains("ct"), "2 embedded SCTs, counted, are enough for a 90-day leaf")
        #expect(counted.json["ct"]?["scts"]?.stringValue == "counted")
        let verified = try Self.judge(
            factory, ["leaf.pem"], anchors + ["--ct-log-list", factory.path("log_list.json")])
        #expect(verified.names.contains("ct"), "\(verified.names)")
        #expect(verified.json["ct"]?["scts"]?.stringValue == "verified")
        let each = verified.json["ct"]?["each"]?.arrayValue ?? []
        #expect(each.map { $0["log"]?.stringValue } == ["Log One", "Log Two"])
        #expect(each.allSatisfy { $0["signature_valid"] == .bool(false) })
        let explanation =
            verified.json["policy"]?["details"]?.arrayValue?.first { $0["name"]?.stringValue == "ct" }?["explanation"]?
            .stringValue ?? ""
        #expect(explanation.contains("Log One: bad signature"), "\(explanation)")
        // A list that is not one is refused, naming the file.
        try "{\"logs\": []}".write(toFile: factory.path("bad.json"), atomically: true, encoding: .utf8)
        let bad = ATSProxyCtl.run([
            "diagnose", "--chain", factory.path("leaf.pem"), "--ct-log-list", factory.path("bad.json"),
        ])
        #expect(bad.exitCode == 2)
        #expect(bad.standardError.contains("bad.json"), "\(bad.standardError)")
    }

    // MARK: - Missing intermediates and input

    @Test("a missing intermediate is named, with the leaf's CA Issuers URL")
    func missingIntermediate() throws {
        let factory = try CertificateFactory()
        try factory.rootCA("root")
        try factory.certificate("inter", issuer: "root", extensions: [], isCA: true)
        try factory.certificate(
            "leaf", issuer: "inter",
            extensions: [
                "subjectAltName=DNS:api.example.test", "extendedKeyUsage=serverAuth",
                "authorityInfoAccess=caIssuers;URI:http://pki.example.test/inter.der",
            ])
        let result = try Self.judge(factory, ["leaf.pem"], ["--ca-file", factory.path("root.pem")])
        #expect(result.names == ["untrusted_chain"])
        let explanation = result.json["policy"]?["details"]?.arrayValue?.first?["explanation"]?.stringValue ?? ""
        #expect(explanation.contains("CN=inter"), "\(explanation)")
        #expect(explanation.contains("http://pki.example.test/inter.der"), "\(explanation)")
        #expect(result.json["missing_issuer"]?["issuer"]?.stringValue == "CN=inter")
        // Given as a second file, in DER, the intermediate completes the path.
        try factory.openssl(["x509", "-in", "inter.pem", "-outform", "DER", "-out", "inter.der"])
        let complete = try Self.judge(factory, ["leaf.pem", "inter.der"], ["--ca-file", factory.path("root.pem")])
        #expect(complete.names == [])
    }

    @Test("a missing intermediate is fetched from the leaf's CA Issuers URL, as iOS fetches it, and the path completes")
    func fetchedIntermediate() throws {
        let factory = try CertificateFactory()
        let issuers = try CAIssuersServer(body: try factory.rootAndIntermediate())
        try factory.leafNamingIssuer(host: "api.example.test", caIssuers: issuers.url())
        let anchors = ["--ca-file", factory.path("root.pem")]
        let fetched = try Self.judge(factory, ["leaf.pem"], anchors)
        #expect(fetched.names == [])
        let fetches = fetched.json["intermediate_fetches"]?.arrayValue ?? []
        #expect(fetches.count == 1)
        #expect(fetches.first?["url"]?.stringValue == issuers.url())
        #expect(fetches.first?["result"]?.stringValue == "fetched")
        #expect(fetches.first?["certificates"] == .strings(["CN=inter"]))
        #expect(issuers.requests.count == 1)
        #expect(issuers.requests.first?.hasPrefix("GET /inter.der HTTP/1.0\r\n") == true)
        // Off, the path stays incomplete, and the violation says where the intermediate was.
        let off = try Self.judge(factory, ["leaf.pem"], anchors + ["--aia-fetch", "off"])
        #expect(off.names == ["untrusted_chain"])
        #expect(off.json["intermediate_fetches"] == .array([]))
        #expect(issuers.requests.count == 1)
    }

    @Test("a fetch that brings no certificate is named in the violation")
    func failedFetch() throws {
        let factory = try CertificateFactory()
        _ = try factory.rootAndIntermediate()
        let issuers = try CAIssuersServer(body: Array("gone".utf8), status: "404 Not Found")
        try factory.leafNamingIssuer(host: "api.example.test", caIssuers: issuers.url())
        let result = try Self.judge(factory, ["leaf.pem"], ["--ca-file", factory.path("root.pem")])
        #expect(result.names == ["untrusted_chain"])
        let explanation = result.json["policy"]?["details"]?.arrayValue?.first?["explanation"]?.stringValue ?? ""
        #expect(explanation.contains("CN=inter"), "\(explanation)")
        #expect(explanation.contains("fetching \(issuers.url()) failed: the server answered 404"), "\(explanation)")
    }

    @Test("the policy's pins apply: a pinned CA key that is not in the path fails")
    func policyPins() throws {
        let factory = try CertificateFactory()
        try factory.rootCA("root")
        try factory.rootCA("other")
        try factory.certificate(
            "leaf", issuer: "root", extensions: ["subjectAltName=DNS:api.example.test", "extendedKeyUsage=serverAuth"])
        let otherPin = try factory.spkiSHA256Base64(key: "other")
        let rootPin = try factory.spkiSHA256Base64(key: "root")
        func policy(_ pin: String) throws -> String {
            let path = factory.path("Info-\(pin.prefix(4).filter(\.isLetter)).plist")
            try """
            <plist version="1.0"><dict><key>NSAppTransportSecurity</key><dict><key>NSPinnedDomains</key><dict>
            <key>api.example.test</key><dict><key>NSPinnedCAIdentities</key><array><dict>
            <key>SPKI-SHA256-BASE64</key><string>\(pin)</string></dict></array></dict></dict></dict></dict></plist>
            """.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let anchors = ["--ca-file", factory.path("root.pem")]
        #expect(
            try Self.judge(factory, ["leaf.pem"], anchors + ["--policy", try policy(otherPin)]).names == [
                "pin_mismatch"
            ])
        #expect(try Self.judge(factory, ["leaf.pem"], anchors + ["--policy", try policy(rootPin)]).names == [])
    }

    @Test("bad input: exit 2 naming the file or the option")
    func badInput() throws {
        let factory = try CertificateFactory()
        try "not a certificate\n".write(toFile: factory.path("junk.pem"), atomically: true, encoding: .utf8)
        let missing = ATSProxyCtl.run(["diagnose", "--chain", factory.path("absent.pem")])
        #expect(missing.exitCode == 2)
        #expect(missing.standardError.contains("absent.pem"), "\(missing.standardError)")
        let junk = ATSProxyCtl.run(["diagnose", "--chain", factory.path("junk.pem")])
        #expect(junk.exitCode == 2)
        #expect(junk.standardError.contains("junk.pem"), "\(junk.standardError)")
        let badDate = ATSProxyCtl.run(["diagnose", "--chain", factory.path("junk.pem"), "--date", "yesterday"])
        #expect(badDate.exitCode == 2)
        #expect(badDate.standardError.contains("--date"), "\(badDate.standardError)")
        let both = ATSProxyCtl.run(["diagnose", "https://example.com/", "--chain", factory.path("junk.pem")])
        #expect(both.exitCode == 2)
        let hostWithURL = ATSProxyCtl.run(["diagnose", "https://example.com/", "--host", "a.test"])
        #expect(hostWithURL.exitCode == 2)
        #expect(hostWithURL.standardError.contains("--host goes with --chain"), "\(hostWithURL.standardError)")
    }

    @Test("text output names each violation with Apple's codes and what fixes it")
    func text() throws {
        let factory = try CertificateFactory()
        try factory.rootCA("root")
        try factory.certificate(
            "leaf", issuer: "root", key: "rsa:1024",
            extensions: ["subjectAltName=DNS:api.example.test", "extendedKeyUsage=serverAuth"])
        let result = ATSProxyCtl.run([
            "diagnose", "--chain", factory.path("leaf.pem"), "--ca-file", factory.path("root.pem"), "--system-roots",
            "off",
        ])
        #expect(result.exitCode == 1)
        #expect(result.standardOutput.contains("Result : FAIL"))
        #expect(result.standardOutput.contains("key_size, NSURLErrorSecureConnectionFailed -1200 [3:-9883]"))
        #expect(result.standardOutput.contains("server: reissue the certificate with an RSA key of 2048 bits"))
        #expect(result.standardOutput.contains("Certificate chain: chains to a user-installed root"))
    }
}
