import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// `atsproxyctl report` on a log the real daemon just wrote: real openssl servers (TLS 1.0 only,
/// RSA key exchange only, compliant), a plain-HTTP origin, curl through the proxy; then the
/// suggestion becomes the policy, and the same traffic passes.
@Suite("atsproxyctl report on a live daemon's log", .startsProcesses(timeLimit: .seconds(60)))
struct ReportProcessTests {
    /// curl options that let curl itself speak TLS 1.0 and RSA key exchange behind the tunnel,
    /// whatever Debian's system OpenSSL settings say: the proxy's verdict is under test, not curl's.
    static let weakCurl = ["--tlsv1.0", "--ciphers", "DEFAULT:@SECLEVEL=0"]

    @Test("the suggestion from the log lets exactly the blocked traffic through after a reload")
    func suggestionFromLiveLog() throws {
        let factory = try CertificateFactory()
        try factory.rootCA("root")
        let names = ["compliant.report.test", "legacy.report.test", "rsa.report.test", "plain.report.test"]
        try factory.certificate(
            "leaf", issuer: "root",
            extensions: [
                "subjectAltName=" + names.map { "DNS:\($0)" }.joined(separator: ","), "extendedKeyUsage=serverAuth",
            ])
        let hosts = try writeHostsFile(in: factory.directory, names)
        let compliant = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let legacy = try TestTLSServer(
            directory: factory.directory,
            ["-cert", "leaf.pem", "-key", "leaf.key", "-tls1", "-cipher", "ECDHE-RSA-AES128-SHA:@SECLEVEL=0"])
        let rsa = try TestTLSServer(
            directory: factory.directory,
            ["-cert", "leaf.pem", "-key", "leaf.key", "-tls1_2", "-cipher", "AES128-GCM-SHA256"])
        let origin = try TestHTTPOrigin(directory: factory.directory)
        let policy = PolicyFile(directory: factory.directory)
        try policy.write(ats: "")
        let daemon = try DaemonProcess(
            directory: factory.directory,
            [
                "--listen", "127.0.0.1:0", "--policy", policy.path, "--hosts-file", hosts, "--ca-file",
                factory.path("root.pem"),
                "--system-roots", "off", "--threads", "2",
                // Blocked traffic refused at the CONNECT (403), before and after the reload: verdict mode.
                "--tunnel-start", "verdict",
            ])

        let urls = [
            "https://compliant.report.test:\(compliant.port)/", "https://legacy.report.test:\(legacy.port)/",
            "https://rsa.report.test:\(rsa.port)/", "http://plain.report.test:\(origin.port)/",
        ]
        /// The proxy's refusal (its answer to CONNECT, or to the http:// request), else the origin's status.
        func statuses() throws -> [Int] {
            try urls.map { url in
                let result = try runCommand(
                    "/usr/bin/curl",
                    [
                        "-sS", "--max-time", "30", "-o", "/dev/null", "-w", "%{http_connect} %{http_code}",
                        "--proxy", "http://127.0.0.1:\(daemon.port)", "--cacert", factory.path("root.pem"),
                    ] + Self.weakCurl + [url])
                let codes = result.standardOutput.split(separator: " ").compactMap { Int($0) }
                return codes.count == 2 && codes[0] != 0 && codes[0] != 200 ? codes[0] : codes.last ?? 0
            }
        }
        let before = try statuses()
        #expect(before == [200, 403, 403, 403], "the ATS defaults let only the compliant server through: \(before)")
        _ = daemon.logLines(atLeast: 4)

        let result = atsproxyctl("report", daemon.logPath, "--json")
        #expect(result.exitCode == 0, "\(result.standardError)")
        let report = try #require(jsonObject(result.standardOutput))
        let domains = try #require(
            jsonValue(report, "suggested", "NSAppTransportSecurity", "NSExceptionDomains") as? [String: Any])
        #expect(Set(domains.keys) == ["legacy.report.test", "rsa.report.test", "plain.report.test"])
        #expect(domains["legacy.report.test"] as? [String: String] == ["NSExceptionMinimumTLSVersion": "TLSv1.0"])
        #expect(domains["rsa.report.test"] as? [String: Bool] == ["NSExceptionRequiresForwardSecrecy": false])
        #expect(domains["plain.report.test"] as? [String: Bool] == ["NSExceptionAllowsInsecureHTTPLoads": true])
        #expect((report["unfixable"] as? [Any])?.isEmpty == true)

        // The text output's fragment, pasted into the app's Info.plist as it is.
        let text = atsproxyctl("report", daemon.logPath).standardOutput
        let start = try #require(text.range(of: "<key>NSAppTransportSecurity</key>\n<dict>\n"))
        let end = try #require(text.range(of: "\n</dict>\n", range: start.upperBound..<text.endIndex))
        try policy.write(
            raw: "<plist version=\"1.0\"><dict>\n" + String(text[start.lowerBound..<end.upperBound])
                + "</dict></plist>\n")
        let reload = atsproxyctl("reload", "--socket", daemon.controlSocket)
        #expect(reload.exitCode == 0, "\(reload.standardError)")
        #expect(try statuses() == [200, 200, 200, 200], "the suggested policy lets the same traffic through")

        // The new day's log, compared with the policy now in force: nothing unused, nothing missing.
        let lines = daemon.logLines(atLeast: 8)
        #expect(lines.suffix(4).map { $0["action"] as? String } == ["allowed", "allowed", "allowed", "allowed"])
        let again = atsproxyctl("report", daemon.logPath, "--policy", policy.path, "--json")
        let compared = try #require(jsonObject(again.standardOutput))
        #expect((compared["unused"] as? [Any])?.isEmpty == true, "\(again.standardOutput)")
        #expect((compared["missing"] as? [Any])?.isEmpty == true, "\(again.standardOutput)")
        #expect(daemon.terminate() == 0)
    }
}
