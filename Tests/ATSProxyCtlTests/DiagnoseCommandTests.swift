import ATSPolicy
import ATSProxyCtl
import Foundation
import Glibc
import Synchronization
import TLSTestSupport
import Testing
import TextFormats

/// One real server and the diagnose run against it: a non-local name (so ATS applies; a dotless
/// name would be exempt as local) mapped to 127.0.0.1 by a hosts file, and the server's root as a
/// user-installed anchor.
struct DiagnosedServer {
    static let host = "diag.example.test"
    let factory: CertificateFactory
    let server: TestTLSServer

    init(_ arguments: (CertificateFactory) throws -> [String]) throws {
        factory = try CertificateFactory()
        server = try TestTLSServer(directory: factory.directory, try arguments(factory))
        try "127.0.0.1 \(Self.host)\n".write(toFile: factory.path("hosts"), atomically: true, encoding: .utf8)
    }

    func diagnose(_ extra: [String] = [], url: String? = nil) -> ATSProxyCtl.Result {
        ATSProxyCtl.run(
            [
                "diagnose", url ?? "https://\(Self.host):\(server.port)/", "--ca-file", factory.path("root.pem"),
                "--hosts-file", factory.path("hosts"),
            ] + extra)
    }

    /// `diagnose --json`, parsed.
    func json(_ extra: [String] = []) throws -> JSONValue {
        let result = diagnose(["--json"] + extra)
        withExtendedLifetime(server) {}
        return try JSONValue(parsing: Array(result.standardOutput.utf8))
    }
}

extension JSONValue {
    /// The `tests` array as name → result.
    var testResults: [String: String] {
        Dictionary(
            uniqueKeysWithValues: (self["tests"]?.arrayValue ?? []).compactMap { test in
                guard let name = test["name"]?.stringValue, let result = test["result"]?.stringValue else { return nil }
                return (name, result)
            })
    }
}

@Suite("atsproxyctl diagnose against real servers", .startsProcesses(timeLimit: .seconds(60)))
struct DiagnoseCommandTests {
    /// nscurl's tests in its order (nscurl(1) --ats-diagnostics), then atsproxy's insecure-HTTP entries.
    static let nscurlOrder = [
        "ATS Default Connection", "Allow All Loads", "TLSv1.3", "TLSv1.2", "TLSv1.1", "TLSv1.0",
        "Disabling Perfect Forward Secrecy", "Disabling Perfect Forward Secrecy and Allowing Insecure HTTP",
        "TLSv1.3 with PFS disabled", "TLSv1.2 with PFS disabled", "TLSv1.1 with PFS disabled",
        "TLSv1.0 with PFS disabled",
        "TLSv1.3 with PFS disabled and insecure HTTP allowed", "TLSv1.2 with PFS disabled and insecure HTTP allowed",
        "TLSv1.1 with PFS disabled and insecure HTTP allowed", "TLSv1.0 with PFS disabled and insecure HTTP allowed",
    ]
    static let atsproxyExtras = [
        "Allowing Insecure HTTP", "TLSv1.3 with insecure HTTP allowed", "TLSv1.2 with insecure HTTP allowed",
        "TLSv1.1 with insecure HTTP allowed", "TLSv1.0 with insecure HTTP allowed",
    ]
    /// Every test, failed: what a run must report when nothing helps (all of them, so an empty or
    /// short list does not pass for "every test fails").
    static let allFailing = Dictionary(uniqueKeysWithValues: (nscurlOrder + atsproxyExtras).map { ($0, "FAIL") })

    /// Every test's expected result for a server kind: the tests that PASS (the rest FAIL).
    struct Expectation: Sendable, CustomTestStringConvertible {
        var server: String
        var arguments: @Sendable (CertificateFactory) throws -> [String]
        var passing: Set<String>
        var minimal: String?
        var testDescription: String { server }
    }

    static let host = DiagnosedServer.host

    static let expectations: [Expectation] = [
        Expectation(
            server: "TLS 1.2 with forward secrecy",
            arguments: { try CompliantServer.tls12ForwardSecret.serverArguments($0, hostName: host) },
            passing: Set(nscurlOrder + atsproxyExtras).subtracting([
                "TLSv1.3", "TLSv1.3 with PFS disabled", "TLSv1.3 with PFS disabled and insecure HTTP allowed",
                "TLSv1.3 with insecure HTTP allowed",
            ]), minimal: nil),
        Expectation(
            server: "TLS 1.0 only", arguments: { try NonCompliantServer.tls10Only.serverArguments($0, hostName: host) },
            passing: [
                "Allow All Loads", "TLSv1.0", "TLSv1.0 with PFS disabled",
                "TLSv1.0 with PFS disabled and insecure HTTP allowed",
                "TLSv1.0 with insecure HTTP allowed",
            ], minimal: #"{"NSExceptionMinimumTLSVersion":"TLSv1.0"}"#),
        Expectation(
            server: "TLS 1.1 only", arguments: { try NonCompliantServer.tls11Only.serverArguments($0, hostName: host) },
            passing: [
                "Allow All Loads", "TLSv1.1", "TLSv1.0", "TLSv1.1 with PFS disabled", "TLSv1.0 with PFS disabled",
                "TLSv1.1 with PFS disabled and insecure HTTP allowed",
                "TLSv1.0 with PFS disabled and insecure HTTP allowed",
                "TLSv1.1 with insecure HTTP allowed", "TLSv1.0 with insecure HTTP allowed",
            ], minimal: #"{"NSExceptionMinimumTLSVersion":"TLSv1.1"}"#),
        Expectation(
            server: "TLS 1.2 with RSA key exchange only",
            arguments: { try NonCompliantServer.rsaKeyExchangeOnly.serverArguments($0, hostName: host) },
            passing: [
                "Allow All Loads", "Disabling Perfect Forward Secrecy",
                "Disabling Perfect Forward Secrecy and Allowing Insecure HTTP",
                "TLSv1.2 with PFS disabled", "TLSv1.1 with PFS disabled", "TLSv1.0 with PFS disabled",
                "TLSv1.2 with PFS disabled and insecure HTTP allowed",
                "TLSv1.1 with PFS disabled and insecure HTTP allowed",
                "TLSv1.0 with PFS disabled and insecure HTTP allowed",
            ], minimal: #"{"NSExceptionRequiresForwardSecrecy":false}"#),
        Expectation(
            server: "TLS 1.0 with RSA key exchange only",
            arguments: { factory in
                try factory.rootCA("root")
                try factory.certificate(
                    "leaf", issuer: "root", extensions: ["subjectAltName=DNS:\(host)", "extendedKeyUsage=serverAuth"])
                return ["-cert", "leaf.pem", "-key", "leaf.key", "-tls1", "-cipher", "AES128-SHA:@SECLEVEL=0"]
            },
            passing: [
                "Allow All Loads", "TLSv1.0 with PFS disabled", "TLSv1.0 with PFS disabled and insecure HTTP allowed",
            ], minimal: #"{"NSExceptionMinimumTLSVersion":"TLSv1.0","NSExceptionRequiresForwardSecrecy":false}"#),
        Expectation(
            server: "TLS 1.3 only", arguments: { try CompliantServer.tls13Only.serverArguments($0, hostName: host) },
            passing: Set(nscurlOrder + atsproxyExtras), minimal: nil),
    ]

    @Test(
        "every test passes or fails as Apple's rules say, in nscurl's order; the conclusion is the smallest passing entry",
        arguments: expectations)
    func everyConfiguration(_ expectation: Expectation) throws {
        let diagnosed = try DiagnosedServer(expectation.arguments)
        let json = try diagnosed.json()
        let names = (json["tests"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue }
        #expect(names == Self.nscurlOrder + Self.atsproxyExtras)
        let passing = Set(json.testResults.filter { $0.value == "PASS" }.keys)
        #expect(passing == expectation.passing, "unexpected: \(passing.symmetricDifference(expectation.passing))")
        #expect(json["minimal_exception"]?.serialized == (expectation.minimal ?? "null"))
        #expect(json["trust_failure"] == .bool(false))
        let kind = json["conclusion"]?["kind"]?.stringValue
        #expect(kind == (expectation.minimal == nil ? "defaults_pass" : "exception_needed"))
    }

    @Test(
        "a server that fails default trust: every test fails, trust_failure, and no ATS setting helps",
        arguments: [
            NonCompliantServer.expired, .notYetValid, .otherHostName, .commonNameOnly, .selfSignedLeaf, .unknownRoot,
            .rsa1024Leaf, .sha1Leaf, .sha1Intermediate, .validityOver825Days, .clientAuthEKUOnly,
            .smimeOnlyIntermediate,
        ])
    func trustFailure(_ kind: NonCompliantServer) throws {
        let diagnosed = try DiagnosedServer { try kind.serverArguments($0, hostName: DiagnosedServer.host) }
        let json = try diagnosed.json()
        #expect(json.testResults == Self.allFailing)
        #expect(json["trust_failure"] == .bool(true))
        #expect(json["minimal_exception"] == .null)
        #expect(json["conclusion"]?["kind"]?.stringValue == "no_setting_helps")
        #expect(json["conclusion"]?["text"]?.stringValue == "The server fails default trust: no ATS setting helps.")
        let allowAll = json["tests"]?.arrayValue?[1]
        #expect(allowAll?["violations"] == .strings([kind.violation]), "\(String(describing: allowAll))")
        #expect(json["conclusion"]?["reasons"]?.arrayValue?.isEmpty == false)
    }

    /// docs/ats-rules.md, "The decisions" (`os_profile`): a published nscurl run on macOS 26
    /// fails every test against a TLS 1.0-only server, "Allow All Loads" included, with -1200/-9836.
    @Test("ios26, a TLS 1.0-only server: every test fails with -1200/-9836, and no ATS setting helps: TLS 1.2 needed")
    func ios26RefusesTLS10() throws {
        let diagnosed = try DiagnosedServer {
            try NonCompliantServer.tls10Only.serverArguments($0, hostName: DiagnosedServer.host)
        }
        let json = try diagnosed.json(["--os-profile", "ios26", "--no-survey"])
        #expect(json["os_profile"] == "ios26")
        #expect(json.testResults == Self.allFailing)
        for test in json["tests"]?.arrayValue ?? [] {
            let name = test["name"]?.stringValue ?? "?"
            #expect(test["violations"] == .strings(["tls_version"]), "\(name)")
            #expect(test["error"]?.serialized == #"{"nsurl":-1200,"ssl":-9836}"#, "\(name)")
            // No key to suggest: none helps on iOS 26.
            #expect(test["details"]?.arrayValue?.allSatisfy { $0["allowed_by"] == .null } == true, "\(name)")
        }
        #expect(json["minimal_exception"] == .null)
        #expect(json["minimal_exception_plist"] == .null)
        #expect(json["conclusion"]?["kind"]?.stringValue == "no_setting_helps")
        let headline = try #require(json["conclusion"]?["text"]?.stringValue)
        #expect(headline.hasSuffix("no ATS setting helps: the server must offer TLS 1.2."), "\(headline)")
        #expect(
            json["conclusion"]?["reasons"]?.arrayValue?.first?.stringValue?.contains("iOS 26 refuses for every load")
                == true)

        // The text says the same, and the exit status is that of other servers no setting helps.
        let text = diagnosed.diagnose(["--os-profile", "ios26", "--no-survey"])
        #expect(text.exitCode == 1)
        #expect(
            text.standardOutput.contains(
                "---\nAllow All Loads\nResult : FAIL\nViolations : tls_version -1200 [3:-9836]\n"))
        #expect(text.standardOutput.contains("Conclusion\n\(headline)\n"))
        #expect(!text.standardOutput.contains("Add to the app's Info.plist"))
        // (Under ios17 the same server needs only a TLSv1.0 exception: everyConfiguration's "TLS 1.0 only".)
        withExtendedLifetime(diagnosed.server) {}
    }

    @Test("ios9 had no TLS 1.3: no TLSv1.3 test in the list, text or JSON, and the conclusion is unchanged")
    func ios9WithoutTLS13() throws {
        let diagnosed = try DiagnosedServer {
            try NonCompliantServer.tls10Only.serverArguments($0, hostName: DiagnosedServer.host)
        }
        let json = try diagnosed.json(["--os-profile", "ios9", "--no-survey"])
        let names = (json["tests"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue }
        #expect(names == (Self.nscurlOrder + Self.atsproxyExtras).filter { !$0.hasPrefix("TLSv1.3") })
        #expect(json["conclusion"]?["kind"]?.stringValue == "exception_needed")
        #expect(json["minimal_exception"]?.serialized == #"{"NSExceptionMinimumTLSVersion":"TLSv1.0"}"#)
        let text = diagnosed.diagnose(["--os-profile", "ios9", "--no-survey"])
        #expect(!text.standardOutput.contains("TLSv1.3"), "\(text.standardOutput)")
        #expect(text.standardOutput.contains("---\nTLSv1.2\nResult : FAIL\n"))
        withExtendedLifetime(diagnosed.server) {}
    }

    /// A server that hangs up mid-handshake with no alert is errSSLClosedNoNotify, -9816, to Apple's client
    /// (SecBase.h); -9824 is a refused handshake. The front
    /// reads the first ClientHello (the ATS-shaped probe of the first test) and closes; every later
    /// connection is relayed to a compliant s_server, so the permissive probe's facts break no rule.
    @Test("an EOF during the ATS handshake is handshake_failure with -1200/-9816, not -9824")
    func unexpectedEOF() throws {
        let backend = try DiagnosedServer {
            try CompliantServer.tls12ForwardSecret.serverArguments($0, hostName: DiagnosedServer.host)
        }
        let connections = Atomic<Int>(0)
        let backendPort = backend.server.port
        let front = try RawTCPServer { client in
            if connections.add(1, ordering: .relaxed).newValue == 1 {
                _ = receiveAvailable(client, wait: 5)  // the ClientHello, then EOF: no alert
                return
            }
            guard let upstream = connectLoopback(port: backendPort) else { return }
            defer { close(upstream) }
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                relay(from: upstream, to: client)
                shutdown(client, Int32(SHUT_RDWR))
                done.signal()
            }
            relay(from: client, to: upstream)
            shutdown(upstream, Int32(SHUT_WR))
            done.wait()
        }
        let result = backend.diagnose(["--json", "--no-survey"], url: "https://\(DiagnosedServer.host):\(front.port)/")
        withExtendedLifetime(backend.server) {}
        withExtendedLifetime(front) {}
        let json = try JSONValue(parsing: Array(result.standardOutput.utf8))
        let first = json["tests"]?.arrayValue?.first
        #expect(first?["violations"] == .strings(["handshake_failure"]), "\(String(describing: first))")
        #expect(first?["error"]?.serialized == #"{"nsurl":-1200,"ssl":-9816}"#)
        // Every later load reached the compliant server.
        #expect(json.testResults["Allow All Loads"] == "PASS")
        // The group of the test's own handshake: none where it failed (the permissive probe's is not the
        // app's), the server's choice where it completed.
        #expect(first?["tls_group"] == .null)
        #expect(json["tests"]?.arrayValue?[1]["tls_group"]?.serialized == #"{"name":"x25519","codepoint":29}"#)
    }

    @Test(
        "nothing in common with any Apple client: every test fails, and not for trust",
        arguments: [NonCompliantServer.dheOnly, .tls13CCMOnly, .finiteFieldGroupsOnly])
    func nothingInCommon(_ kind: NonCompliantServer) throws {
        let diagnosed = try DiagnosedServer { try kind.serverArguments($0, hostName: DiagnosedServer.host) }
        let json = try diagnosed.json(["--no-survey"])
        #expect(json.testResults == Self.allFailing)
        #expect(json["tests"]?.arrayValue?[1]["violations"] == .strings([kind.violation]))
        #expect(json["trust_failure"] == .bool(true))
        #expect(
            json["conclusion"]?["text"]?.stringValue
                == "The server fails what every Apple client requires: no ATS setting helps.")
    }

    @Test("a DHE-only server's facts: the suite it takes is one no Apple client offers")
    func noSuiteInCommon() throws {
        let diagnosed = try DiagnosedServer {
            try NonCompliantServer.dheOnly.serverArguments($0, hostName: DiagnosedServer.host)
        }
        let json = try diagnosed.json()
        #expect(json.testResults == Self.allFailing)
        #expect(json["trust_failure"] == .bool(true))
        #expect(
            json["conclusion"]?["text"]?.stringValue
                == "The server fails what every Apple client requires: no ATS setting helps.")
        let versions = json["server"]?["versions"]?.arrayValue ?? []
        let tls12 = versions.first { $0["version"]?.stringValue == "TLSv1.2" }
        #expect(tls12?["suites"]?.arrayValue?.first?["name"]?.stringValue == "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256")
        #expect(tls12?["suites"]?.arrayValue?.first?["ats"]?.stringValue == "not_offered")
    }

    @Test(
        "the server's facts: versions, every accepted suite in the server's order, the chain, pins that match openssl's"
    )
    func serverFacts() throws {
        let diagnosed = try DiagnosedServer { factory in
            try factory.rootCA("root")
            try factory.certificate(
                "leaf", issuer: "root",
                extensions: ["subjectAltName=DNS:\(DiagnosedServer.host),IP:127.0.0.1", "extendedKeyUsage=serverAuth"])
            return [
                "-cert", "leaf.pem", "-key", "leaf.key", "-no_tls1_3", "-serverpref",
                "-cipher", "ECDHE-RSA-AES256-GCM-SHA384:AES128-SHA:ECDHE-RSA-AES128-SHA:@SECLEVEL=0",
            ]
        }
        let json = try diagnosed.json()
        let server = try #require(json["server"])
        let versions = server["versions"]?.arrayValue ?? []
        #expect(versions.map { $0["accepted"] } == [.bool(true), .bool(true), .bool(true), .bool(false)])
        let tls12 = versions[2]["suites"]?.arrayValue ?? []
        #expect(
            tls12.compactMap { $0["name"]?.stringValue } == [
                "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "TLS_RSA_WITH_AES_128_CBC_SHA",
                "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
            ])
        #expect(tls12.compactMap { $0["ats"]?.stringValue } == ["ats", "ats_forward_secrecy_off", "ats"])
        // TLS 1.0 has no GCM: the two CBC suites.
        #expect(versions[0]["suites"]?.arrayValue?.count == 2)
        #expect(versions[3]["refusal"]?.stringValue?.isEmpty == false)

        let chain = server["chain"]?.arrayValue ?? []
        #expect(chain.compactMap { $0["subject"]?.stringValue } == ["CN=leaf", "CN=root"])
        #expect(chain.map { $0["sent_by_server"] } == [.bool(true), .bool(false)])
        #expect(chain.first?["dns_names"] == .strings([DiagnosedServer.host]))
        #expect(chain.first?["ip_addresses"] == .strings(["127.0.0.1"]))
        #expect(chain.first?["key_type"] == "rsa")
        #expect(chain.first?["key_bits"] == .int(2048))
        let leafPin = try diagnosed.factory.spkiSHA256Base64(key: "leaf")
        let rootPin = try diagnosed.factory.spkiSHA256Base64(key: "root")
        #expect(chain.compactMap { $0["spki_sha256"]?.stringValue } == [leafPin, rootPin])
        let pinned = server["pinned_domains"]?["NSPinnedDomains"]?[DiagnosedServer.host]
        #expect(pinned?["NSPinnedLeafIdentities"] == .array([.object([("SPKI-SHA256-BASE64", .string(leafPin))])]))
        #expect(pinned?["NSPinnedCAIdentities"] == .array([.object([("SPKI-SHA256-BASE64", .string(rootPin))])]))
        #expect(server["trust"] == "user_installed_root")
    }

    @Test("the server's facts name Camellia and ARIA suites by their IANA names, not bare hex")
    func camelliaAndARIANames() throws {
        let diagnosed = try DiagnosedServer { factory in
            try factory.rootCA("root")
            try factory.certificate(
                "leaf", issuer: "root",
                extensions: ["subjectAltName=DNS:\(DiagnosedServer.host)", "extendedKeyUsage=serverAuth"])
            return [
                "-cert", "leaf.pem", "-key", "leaf.key", "-tls1_2", "-serverpref",
                "-cipher",
                "ECDHE-ARIA128-GCM-SHA256:ECDHE-RSA-CAMELLIA128-SHA256:CAMELLIA256-SHA:ECDHE-RSA-AES128-GCM-SHA256:@SECLEVEL=0",
            ]
        }
        let json = try diagnosed.json()
        let tls12 = (json["server"]?["versions"]?.arrayValue ?? []).first { $0["version"]?.stringValue == "TLSv1.2" }
        let suites = tls12?["suites"]?.arrayValue ?? []
        #expect(
            suites.compactMap { $0["name"]?.stringValue } == [
                "TLS_ECDHE_RSA_WITH_ARIA_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_CAMELLIA_128_CBC_SHA256",
                "TLS_RSA_WITH_CAMELLIA_256_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
            ])
        #expect(suites.compactMap { $0["id"]?.stringValue } == ["0xC060", "0xC076", "0x0084", "0xC02F"])
        #expect(suites.compactMap { $0["ats"]?.stringValue } == ["not_offered", "not_offered", "not_offered", "ats"])
        withExtendedLifetime(diagnosed.server) {}
    }

    @Test("text: nscurl's layout, the conclusion with a plist fragment that parses to a passing policy, exit 1")
    func textOutput() throws {
        let diagnosed = try DiagnosedServer {
            try NonCompliantServer.tls10Only.serverArguments($0, hostName: DiagnosedServer.host)
        }
        let result = diagnosed.diagnose(["--verbose"])
        #expect(result.exitCode == 1, "\(result.standardError)")
        let text = result.standardOutput
        #expect(text.hasPrefix("Starting ATS Diagnostics\n"))
        #expect(text.contains("---\nATS Default Connection\nATS Dictionary:\n{\n}\nResult : FAIL\n"))
        #expect(
            text.contains(
                "  - tls_version, NSURLErrorSecureConnectionFailed -1200 [3:-9836]: the server negotiated TLS 1.0"))
        #expect(
            text.contains(
                "---\nTLSv1.0\nATS Dictionary:\n{\n    NSExceptionDomains = {\n        \"diag.example.test\" = {\n"
                    + "            NSExceptionMinimumTLSVersion = \"TLSv1.0\";\n        };\n    };\n}\nResult : PASS\n"
                    + "Load : 200 https://diag.example.test:\(diagnosed.server.port)/\nKey exchange : x25519 (29)\n---\n"
            ))
        #expect(
            text.contains(
                "diag.example.test needs an NSExceptionDomains entry: NSExceptionMinimumTLSVersion = TLSv1.0."))
        #expect(text.contains("  TLSv1.0  yes, "))
        #expect(text.contains("SPKI-SHA256-BASE64: \(try diagnosed.factory.spkiSHA256Base64(key: "leaf"))"))

        // The fragment, pasted into an Info.plist, is a policy under which the same server passes.
        let start = try #require(text.range(of: "<key>NSAppTransportSecurity</key>"))
        let end = try #require(text.range(of: "</dict>\n\n", range: start.upperBound..<text.endIndex))
        let fragment = String(text[start.lowerBound..<end.upperBound])
        let policy = diagnosed.factory.path("Info.plist")
        try "<plist version=\"1.0\"><dict>\(fragment)</dict></plist>".write(
            toFile: policy, atomically: true, encoding: .utf8)
        let explained = ATSProxyCtl.run(["explain", "--policy", policy, DiagnosedServer.host])
        #expect(explained.standardOutput.contains("minimum TLS:       TLSv1.0"), "\(explained.standardOutput)")
        withExtendedLifetime(diagnosed.server) {}
    }

    @Test("the header shows the URL as given, host case and path kept; JSON's url stays normalised")
    func headerURLAsGiven() throws {
        let diagnosed = try DiagnosedServer {
            try CompliantServer.tls12ForwardSecret.serverArguments($0, hostName: DiagnosedServer.host)
        }
        let given = "https://Diag.Example.TEST:\(diagnosed.server.port)/v1/items?q=1"
        let text = diagnosed.diagnose(["--no-survey"], url: given)
        #expect(text.exitCode == 0, "\(text.standardError)")
        #expect(
            text.standardOutput.contains(
                "Configuring ATS Info.plist keys and displaying the result of HTTPS loads to \(given).\n"),
            "\(text.standardOutput)")
        let json = diagnosed.diagnose(["--no-survey", "--json"], url: given)
        let parsed = try JSONValue(parsing: Array(json.standardOutput.utf8))
        #expect(parsed["url"]?.stringValue == "https://diag.example.test:\(diagnosed.server.port)/")
        withExtendedLifetime(diagnosed.server) {}
    }

    @Test("a server whose root the device lacks: the text suggests --ca-file for a root of one's own; with it, none")
    func untrustedRootHint() throws {
        let diagnosed = try DiagnosedServer {
            try CompliantServer.tls12ForwardSecret.serverArguments($0, hostName: DiagnosedServer.host)
        }
        let url = "https://\(DiagnosedServer.host):\(diagnosed.server.port)/"
        let without = ATSProxyCtl.run([
            "diagnose", url, "--hosts-file", diagnosed.factory.path("hosts"), "--no-survey",
        ])
        #expect(without.exitCode == 1)
        #expect(without.standardOutput.contains("untrusted_chain"), "\(without.standardOutput)")
        #expect(without.standardOutput.contains("Hint: the chain leads to no root an iPhone trusts"))
        #expect(without.standardOutput.contains("atsproxyctl diagnose --ca-file ROOT.pem \(url)"))
        let with = diagnosed.diagnose(["--no-survey"])
        #expect(with.exitCode == 0 && !with.standardOutput.contains("Hint:"))
        withExtendedLifetime(diagnosed.server) {}
    }

    @Test("a compliant server exits 0; an unreachable one exits 3 and names it; a malformed URL exits 2")
    func exitStatuses() throws {
        let diagnosed = try DiagnosedServer {
            try CompliantServer.tls12ForwardSecret.serverArguments($0, hostName: DiagnosedServer.host)
        }
        #expect(diagnosed.diagnose(["--no-survey"]).exitCode == 0)

        let closed = diagnosed.diagnose(url: "https://\(DiagnosedServer.host):1/")
        #expect(closed.exitCode == 3)
        #expect(
            closed.standardError.contains("https://diag.example.test:1/: cannot connect to diag.example.test port 1"),
            "\(closed.standardError)")
        #expect(closed.standardOutput.isEmpty)

        let malformed = diagnosed.diagnose(url: "ftp://example.com/")
        #expect(malformed.exitCode == 2)
        #expect(malformed.standardError.contains("URL \"ftp://example.com/\": \"ftp\" is not a scheme ATS governs"))

        let badAnchor = ATSProxyCtl.run(["diagnose", "https://example.com/", "--ca-file", "/nonexistent/root.pem"])
        #expect(badAnchor.exitCode == 2)
        #expect(badAnchor.standardError.contains("/nonexistent/root.pem"))
        withExtendedLifetime(diagnosed.server) {}
    }

    @Test(
        "an http:// URL with --cleartext: only the insecure-HTTP tests pass; the smallest entry allows insecure HTTP and nothing else"
    )
    func cleartextURL() throws {
        let factory = try CertificateFactory()
        let origin = try TestHTTPOrigin(directory: factory.directory)
        try "127.0.0.1 \(DiagnosedServer.host)\n".write(
            toFile: factory.path("hosts"), atomically: true, encoding: .utf8)
        let result = ATSProxyCtl.run([
            "diagnose", "http://\(DiagnosedServer.host):\(origin.port)/", "--cleartext", "--hosts-file",
            factory.path("hosts"),
            "--json",
        ])
        withExtendedLifetime(origin) {}
        #expect(result.exitCode == 1, "\(result.standardError)")
        let json = try JSONValue(parsing: Array(result.standardOutput.utf8))
        let passing = Set(json.testResults.filter { $0.value == "PASS" }.keys)
        #expect(
            passing
                == Set(
                    ["Allow All Loads"] + Self.nscurlOrder.filter { $0.contains("nsecure HTTP") }
                        + Self.atsproxyExtras))
        #expect(json["minimal_exception"]?.serialized == #"{"NSExceptionAllowsInsecureHTTPLoads":true}"#)
        #expect(json["tests"]?.arrayValue?.first?["violations"] == .strings(["cleartext"]))
        #expect(json["server"] == .null)
    }

    @Test(
        "an http:// URL whose server speaks no TLS, without --cleartext: judged as the app loads it, the insecure-HTTP entry"
    )
    func plainServerWithoutFlag() throws {
        let factory = try CertificateFactory()
        let origin = try TestHTTPOrigin(directory: factory.directory)
        try "127.0.0.1 \(DiagnosedServer.host)\n".write(
            toFile: factory.path("hosts"), atomically: true, encoding: .utf8)
        let url = "http://\(DiagnosedServer.host):\(origin.port)/"
        let result = ATSProxyCtl.run(["diagnose", url, "--hosts-file", factory.path("hosts"), "--json"])
        let text = ATSProxyCtl.run(["diagnose", url, "--hosts-file", factory.path("hosts")])
        withExtendedLifetime(origin) {}
        #expect(result.exitCode == 1, "\(result.standardError)")
        let json = try JSONValue(parsing: Array(result.standardOutput.utf8))
        #expect(json["minimal_exception"]?.serialized == #"{"NSExceptionAllowsInsecureHTTPLoads":true}"#)
        #expect(json["conclusion"]?["kind"]?.stringValue == "exception_needed")
        #expect(json["https_unavailable"]?.stringValue == "speaks no TLS on port \(origin.port)")
        #expect(json["scheme"]?.stringValue == "http")
        #expect(text.standardOutput.contains("so it is judged as the app loads it, in cleartext"))
        #expect(text.standardOutput.contains("NSExceptionAllowsInsecureHTTPLoads = YES"))
    }

    @Test("a cleartext server behind an https:// URL: every test fails saying it does not speak TLS")
    func notTLS() throws {
        let factory = try CertificateFactory()
        let origin = try TestHTTPOrigin(directory: factory.directory)
        try "127.0.0.1 \(DiagnosedServer.host)\n".write(
            toFile: factory.path("hosts"), atomically: true, encoding: .utf8)
        let result = ATSProxyCtl.run([
            "diagnose", "https://\(DiagnosedServer.host):\(origin.port)/", "--hosts-file", factory.path("hosts"),
            "--json",
            "--no-survey",
        ])
        withExtendedLifetime(origin) {}
        let json = try JSONValue(parsing: Array(result.standardOutput.utf8))
        #expect(json.testResults == Self.allFailing)
        #expect(json["tests"]?.arrayValue?.first?["failure"]?.stringValue?.contains("does not speak TLS") == true)
        #expect(json["conclusion"]?["kind"]?.stringValue == "no_setting_helps")
    }
}

/// Copies bytes from one socket to the other until the first closes or fails.
private func relay(from source: Int32, to destination: Int32) {
    var chunk = [UInt8](repeating: 0, count: 16_384)
    while true {
        let count = recv(source, &chunk, chunk.count, 0)
        if count <= 0 { return }
        guard sendAll(destination, chunk[0..<count]) else { return }
    }
}
