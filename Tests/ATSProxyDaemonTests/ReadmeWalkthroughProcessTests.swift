import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// README's five minutes, as written, with a team's own root and hosts file (issue 29's "done
/// when"): the `make run` line of its first step is taken from README.md, its files replaced by the
/// test's, and the daemon started with exactly the flags `make -n run` gives for it. curl stands
/// for the app (URLSession's User-Agent) and for Safari; `atsproxyctl report --app` and the live
/// view's App filter hold the app's host alone, apart from the browser's.
@Suite("README's five minutes, with your own CA and hosts file", .startsProcesses(timeLimit: .seconds(120)))
struct ReadmeWalkthroughProcessTests {
    static let myApp = "MyApp/1.4.2 CFNetwork/1568.100.1 Darwin/24.0.0"
    static let safari =
        "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1"

    /// The variables of README's `make run LISTEN=… INSPECT=… …` line, as written.
    static func readmeVariables() throws -> [String: String] {
        let readme = try String(contentsOfFile: ServiceFiles.path("README.md"), encoding: .utf8)
        let line = try #require(
            readme.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.hasPrefix("make run ") && $0.contains("CA_FILE=") },
            "README's walk-through has no make run line with CA_FILE")
        var variables: [String: String] = [:]
        for word in line.split(separator: " ").dropFirst(2) {
            let parts = word.split(separator: "=", maxSplits: 1)
            try #require(parts.count == 2, "\(word) in \(line)")
            variables[String(parts[0])] = String(parts[1])
        }
        return variables
    }

    @Test("make run as README writes it, with the test's root and hosts file: one app's plist apart from Safari's")
    func walkthrough() throws {
        let variables = try Self.readmeVariables()
        #expect(Set(variables.keys) == ["LISTEN", "INSPECT", "POLICY", "CA_FILE", "HOSTS_FILE"], "\(variables)")
        #expect(variables["INSPECT"] == "intercept")

        let appHost = "api.staging.test"
        let browserHost = "www.staging.test"
        let fixture = try InterceptFixture(names: [appHost, browserHost])
        try fixture.leaf("leaf", for: [appHost])
        // The app's staging API speaks TLS 1.0 only, under the team's root: it needs an exception.
        let api = try TestTLSServer(
            directory: fixture.directory,
            ["-cert", "leaf.pem", "-key", "leaf.key", "-tls1", "-cipher", "ECDHE-RSA-AES128-SHA:@SECLEVEL=0"])
        let site = try TestHTTPOrigin(directory: fixture.directory)

        // README's variables, each file the test's own; the proxy on loopback, its live view on a free port.
        var run = variables
        run["LISTEN"] = "127.0.0.1:0"
        run["POLICY"] = fixture.policy.path
        run["CA_FILE"] = fixture.factory.path("root.pem")
        run["HOSTS_FILE"] = fixture.hostsFile
        let logFile = fixture.directory + "/atsproxy.log"
        let socket = "/tmp/atsproxy-walk-\(UUID().uuidString.prefix(8)).sock"
        run["RUN_CA_DIR"] = fixture.caDir
        run["LOG_FILE"] = logFile
        run["CONTROL_SOCKET"] = socket
        run["WEB_LISTEN"] = "127.0.0.1:0"
        let (words, printed) = try MakeRunTests.dryRun(run.map { "\($0.key)=\($0.value)" }.sorted())
        #expect(printed.contains("atsproxyctl report \(logFile)"))
        let daemon = try DaemonProcess(
            directory: fixture.directory, words, namedByConfig: (logFile: logFile, controlSocket: socket))

        let app = try fixture.curl(
            daemon,
            ["-o", "/dev/null", "-A", Self.myApp, "--tlsv1.0", "--ciphers", "DEFAULT:@SECLEVEL=0"]
                + ["https://\(appHost):\(api.port)/"])
        // Blocked under the ATS defaults: the TLS alert an app would see.
        #expect(app.status != 0)
        let browser = try fixture.curl(
            daemon, ["-o", "/dev/null", "-A", Self.safari, "http://\(browserHost):\(site.port)/"])
        #expect(browser.status == 0, "\(browser.standardError)")

        let lines = daemon.lines("connection", atLeast: 2)
        try #require(lines.count == 2, "\(lines)")
        let apiLine = try #require(lines.first { $0["host"] as? String == appHost })
        // The team's root is trusted as on a device that installed it: only the TLS version fails.
        #expect(apiLine.violationNames == ["tls_version"], "\(apiLine)")

        // Step 6 from the log: report --app as README prints it.
        let report = atsproxyctl("report", "--app", "MyApp", logFile)
        #expect(report.exitCode == 0, "\(report.standardError)")
        #expect(report.standardOutput.contains("<key>\(appHost)</key>"), "\(report.standardOutput)")
        #expect(!report.standardOutput.contains(browserHost), "\(report.standardOutput)")
        let everything = atsproxyctl("report", logFile).standardOutput
        #expect(everything.contains("<key>\(browserHost)</key>") && everything.contains("<key>\(appHost)</key>"))

        // Step 6 in the live view: the App filter's plist is the app's alone, and says so.
        let web = try #require(daemon.webPort)
        var panel: [String: Any] = [:]
        #expect(
            try eventually {
                panel = try LiveViewProcessTests.plist(web, "app=MyApp")
                return (panel["plist"] as? String)?.contains("<key>\(appHost)</key>") == true
            }, "the live view's plist for MyApp never named its host: \(panel)")
        #expect(!((panel["plist"] as? String) ?? "").contains(browserHost), "\(panel)")
        #expect(panel["scope"] as? String == "For MyApp", "\(panel)")

        #expect(daemon.terminate() == 0)
    }
}
