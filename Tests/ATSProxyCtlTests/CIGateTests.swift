import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// The outputs a CI pipeline gates on: `check --format sarif` against the SARIF 2.1.0 schema,
/// `report --format junit` against the JUnit schema CI systems read (Fixtures/ci), both validated
/// by PyPI's validators, and `report --fail-on violation`'s exit status and words.
@Suite("atsproxyctl for CI gates", .startsProcesses(timeLimit: .seconds(120)))
struct CIGateTests {
    static let schemas = repositoryRoot + "/Tests/ATSProxyCtlTests/Fixtures/ci/"
    static let mistakes = repositoryRoot + "/Tests/ATSPolicyTests/Fixtures/mistakes/"
    static let reportLogs = ReportCommandTests.logs

    /// Validates `document` (and a broken copy, which must fail) with the test venv's Python.
    static func validate(_ kind: String, _ document: String, broken: String) throws {
        let scratch = try ScratchDirectory()
        let good = try scratch.write("good", document)
        let bad = try scratch.write("bad", broken)
        let script =
            kind == "sarif"
            ? """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1], encoding="utf-8"))
            jsonschema.Draft4Validator.check_schema(schema)
            validator = jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())
            validator.validate(json.load(open(sys.argv[2], encoding="utf-8")))
            try:
                validator.validate(json.load(open(sys.argv[3], encoding="utf-8")))
                sys.exit("the broken document passed")
            except jsonschema.ValidationError:
                pass
            """
            : """
            import sys, xmlschema
            schema = xmlschema.XMLSchema(sys.argv[1])
            schema.validate(sys.argv[2])
            if schema.is_valid(sys.argv[3]):
                sys.exit("the broken document passed")
            """
        let schema = Self.schemas + (kind == "sarif" ? "sarif-schema-2.1.0.json" : "junit-10.xsd")
        let run = try runCommand(testPython, ["-c", script, schema, good, bad], timeLimit: 60)
        #expect(run.status == 0, "\(kind): \(run.standardError)")
    }

    @Test("check --format sarif: valid SARIF 2.1.0, a result per finding at its line, with its key path and fix")
    func sarif() throws {
        // Errors, a warning-free info finding without a fix, each at its line.
        let policy = Self.mistakes + "keys-among-domains.xml"
        let json = try #require(try jsonLines(ATSProxyCtl.run(["check", "--json", policy]).standardOutput).first)
        let findings = try #require(json["findings"] as? [[String: Any]])
        #expect(!findings.isEmpty)
        let result = ATSProxyCtl.run(["check", "--format", "sarif", policy])
        #expect(result.exitCode == 0, "\(result.standardError)")
        let log = try #require(try jsonLines(result.standardOutput).first)
        let run = try #require((log["runs"] as? [[String: Any]])?.first)
        let results = try #require(run["results"] as? [[String: Any]])
        #expect(results.count == findings.count)
        for (finding, sarif) in zip(findings, results) {
            #expect(sarif["ruleId"] as? String == finding["code"] as? String)
            let location = try #require((sarif["locations"] as? [[String: Any]])?.first)
            let physical = try #require(location["physicalLocation"] as? [String: Any])
            #expect((physical["artifactLocation"] as? [String: Any])?["uri"] as? String == policy)
            #expect((physical["region"] as? [String: Any])?["startLine"] as? Int == finding["line"] as? Int)
            let text = try #require((sarif["message"] as? [String: Any])?["text"] as? String)
            if let fix = finding["fix"] as? String { #expect(text.contains("Fix: " + fix)) }
            #expect((sarif["properties"] as? [String: Any])?["keyPath"] as? String == finding["path"] as? String)
        }
        // A result whose level is not one of SARIF's must fail the schema: the check can fail.
        try Self.validate(
            "sarif", result.standardOutput,
            broken: result.standardOutput.replacingOccurrences(of: #""level":"warning""#, with: #""level":"warn""#)
                .replacingOccurrences(of: #""level":"error""#, with: #""level":"fatal""#))
    }

    @Test("check --format sarif on a file that is no policy: a valid SARIF log with the error, exit 2")
    func sarifUnreadable() throws {
        let scratch = try ScratchDirectory()
        let path = try scratch.write("not a plist.plist", "hello")
        let result = ATSProxyCtl.run(["check", "--format", "sarif", path])
        #expect(result.exitCode == 2)
        #expect(result.standardOutput.contains(#""level":"error""#))
        #expect(result.standardOutput.contains("not%20a%20plist.plist"), "the path as a URI reference")
        try Self.validate(
            "sarif", result.standardOutput,
            broken: result.standardOutput.replacingOccurrences(of: #""version":"2.1.0""#, with: #""version":"2.2""#))
        #expect(ATSProxyCtl.run(["check", "--json", "--format", "sarif", path]).exitCode == 2, "flags that disagree")
    }

    @Test("report --format junit: valid JUnit XML, a case per host, failed where the device would fail")
    func junit() throws {
        let result = ATSProxyCtl.run(["report"] + Self.reportLogs + ["--format", "junit"])
        #expect(result.exitCode == 0, "\(result.standardError)")
        let xml = result.standardOutput
        #expect(xml.contains(#"<testcase classname="ats.urlsession" name="api.example.com"/>"#))
        #expect(xml.contains(#"<testcase classname="ats.urlsession" name="expired.example.net">"#))
        #expect(
            xml.contains(
                "<failure type=\"ats_violation\" message=\"expired.example.net would fail on the device: expired:"))
        #expect(!xml.contains(#"name="localhost""#), "local hosts are exempt, not cases")
        #expect(xml.contains(#"name="down.example.com">"#) && xml.contains("<skipped message=\"never reached"))
        let failures = xml.components(separatedBy: "<failure ").count - 1
        #expect(xml.contains(#"failures="\#(failures)""#))
        // Well-formed, but a case without its required name: the schema must refuse it.
        try Self.validate(
            "junit", xml,
            broken: xml.replacingOccurrences(
                of: #"<testcase classname="ats.urlsession" name="#, with: #"<testcase classname="ats.urlsession" nom="#)
        )
    }

    @Test("report --fail-on violation: exit 1 naming each host that would fail; 0 when none would")
    func failOn() throws {
        let result = ATSProxyCtl.run(["report"] + Self.reportLogs + ["--fail-on", "violation"])
        #expect(result.exitCode == 1)
        #expect(result.standardError.contains("would fail on the device:"))
        for host in ["expired.example.net", "legacy.example.com", "feed.example.org", "dhe.example.org"] {
            #expect(result.standardError.contains("\n  \(host): "), "\(host) in \(result.standardError)")
        }
        for host in ["api.example.com", "localhost", "media.example.org"] {
            #expect(!result.standardError.contains("  \(host): "), "\(host) passes")
        }
        // With the app's policy, its missing keys decide: legacy.example.com lacks its TLS floor.
        let policy = ATSProxyCtl.run(
            ["report"] + Self.reportLogs + ["--fail-on", "violation", "--policy", ReportCommandTests.currentPolicy])
        #expect(policy.exitCode == 1)
        #expect(
            policy.standardError.contains(
                "legacy.example.com: the policy lacks NSExceptionDomains › legacy.example.com"))

        let scratch = try ScratchDirectory()
        let clean = try scratch.write(
            "clean.log",
            try String(contentsOfFile: ReportCommandTests.directory + "atsproxy.log", encoding: .utf8)
                .split(separator: "\n").filter {
                    $0.contains(#""host":"api.example.com""#) && $0.contains(#""compliant":true"#)
                }
                .joined(separator: "\n") + "\n")
        let passing = ATSProxyCtl.run(["report", clean, "--fail-on", "violation"])
        #expect(passing.exitCode == 0, "\(passing.standardError)")
    }
}
