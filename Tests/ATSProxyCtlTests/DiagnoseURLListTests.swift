import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing
import TextFormats

/// `diagnose --urls`: many endpoints in one run, a table or one JSON document, the worst status; and
/// `--os-profile apple-system`, Apple's rules for the OS's own services (support article 126655).
@Suite("diagnose --urls and the apple-system profile", .startsProcesses(timeLimit: .seconds(120)))
struct DiagnoseURLListTests {
    /// One root; a compliant TLS 1.3 server and a TLS 1.0-only one, both for the one test name.
    final class Endpoints {
        static let host = "mdm.example.test"
        let factory: CertificateFactory
        let good: TestTLSServer
        let legacy: TestTLSServer

        init() throws {
            factory = try CertificateFactory()
            try factory.rootCA("root")
            try factory.certificate(
                "leaf", issuer: "root",
                extensions: ["subjectAltName=DNS:\(Self.host)", "extendedKeyUsage=serverAuth"])
            try "127.0.0.1 \(Self.host)\n".write(toFile: factory.path("hosts"), atomically: true, encoding: .utf8)
            good = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
            legacy = try TestTLSServer(
                directory: factory.directory,
                ["-cert", "leaf.pem", "-key", "leaf.key", "-tls1", "-cipher", "ECDHE-RSA-AES128-SHA:@SECLEVEL=0"])
        }

        func list(_ lines: [String]) throws -> String {
            let path = factory.path("urls-\(UUID().uuidString).txt")
            try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }

        func run(_ file: String, _ extra: [String] = []) -> ATSProxyCtl.Result {
            ATSProxyCtl.run(
                [
                    "diagnose", "--urls", file, "--ca-file", factory.path("root.pem"), "--hosts-file",
                    factory.path("hosts"), "--system-roots", "off", "--no-survey",
                ] + extra)
        }

        var goodURL: String { "https://\(Self.host):\(good.port)/" }
        var legacyURL: String { "https://\(Self.host):\(legacy.port)/" }
    }

    @Test("a list: each URL diagnosed, one JSON document, the exit status of the worst")
    func list() throws {
        let endpoints = try Endpoints()
        let file = try endpoints.list([
            "# fleet endpoints", endpoints.goodURL, "", endpoints.legacyURL, "https://bad host/",
        ])
        let result = endpoints.run(file, ["--json", "--jobs", "2"])
        #expect(result.exitCode == 2, "a bad line is the worst: \(result.standardError)")
        #expect(result.standardError.contains("\(file):5:"), "\(result.standardError)")
        let json = try JSONValue(parsing: result.standardOutput)
        let rows = json["urls"]?.arrayValue ?? []
        #expect(rows.map { $0["line"]?.intValue } == [2, 4, 5], "in the list's order, whatever finished first")
        #expect(rows[0]["conclusion"]?["kind"]?.stringValue == "defaults_pass")
        #expect(rows[1]["minimal_exception"]?.serialized == #"{"NSExceptionMinimumTLSVersion":"TLSv1.0"}"#)
        #expect(rows[2]["error"]?.stringValue?.contains("bad host") == true)
        #expect(json["passed"]?.intValue == 1)
        #expect(json["failed"]?.intValue == 1)
        #expect(json["errors"]?.intValue == 1)
        #expect(json["exit_status"]?.intValue == 2)

        let clean = endpoints.run(try endpoints.list([endpoints.goodURL, endpoints.legacyURL]))
        #expect(clean.exitCode == 1)
        #expect(clean.standardOutput.contains("PASS         \(endpoints.goodURL)"), "\(clean.standardOutput)")
        #expect(clean.standardOutput.contains("FAIL         \(endpoints.legacyURL)"), "\(clean.standardOutput)")
        #expect(clean.standardOutput.contains("1 of 2 URLs pass with the ATS defaults"))
        let empty = endpoints.run(try endpoints.list(["# nothing"]))
        #expect(empty.exitCode == 2)
    }

    @Test("apple-system: TLS 1.2 is needed and no Info.plist entry is proposed, where an app could have one")
    func appleSystem() throws {
        let endpoints = try Endpoints()
        let file = try endpoints.list([endpoints.goodURL, endpoints.legacyURL])
        let result = endpoints.run(file, ["--json", "--os-profile", "apple-system"])
        #expect(result.exitCode == 1)
        let rows = try JSONValue(parsing: result.standardOutput)["urls"]?.arrayValue ?? []
        #expect(rows.first?["conclusion"]?["kind"]?.stringValue == "defaults_pass")
        let legacy = rows.last
        #expect(legacy?["os_profile"]?.stringValue == "apple-system")
        #expect(legacy?["minimal_exception"] == .null)
        #expect(legacy?["conclusion"]?["kind"]?.stringValue == "no_setting_helps")
        #expect(
            legacy?["conclusion"]?["text"]?.stringValue?.contains(
                "take no Info.plist exception: the server must change")
                == true)
        // Every test fails: an exception dictionary is not read for the OS's own connections.
        #expect(legacy?.testResults.values.allSatisfy { $0 == "FAIL" } == true, "\(String(describing: legacy))")
    }
}
