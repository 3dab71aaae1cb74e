import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// The pages in a real browser: Debian's chromium, headless, driven by Selenium (Browser/pages.py)
/// through a real daemon: the onboarding page through the proxy and straight from the listener,
/// the CA check over https, the PAC file run by the browser's JavaScript engine, and the live view
/// showing a blocked host within a second of its connection, with the plist panel equal to what
/// `atsproxyctl report` prints for the daemon's log. Screenshots at a phone's width are saved.
@Suite(.startsProcesses(timeLimit: .seconds(120)))
struct WebBrowserProcessTests {
    static var browserAvailable: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver")
            && FileManager.default.isExecutableFile(atPath: PrometheusScrape.python)
    }

    @Test(
        "chromium: onboarding through the proxy and direct, the check, the PAC file, the live view live with report's plist",
        .enabled(if: browserAvailable, "chromium, chromedriver or the test venv is missing: make test installs them"))
    func pagesInChromium() throws {
        signal(SIGPIPE, SIG_IGN)  // A browser that died early must fail the test, not kill the run.
        let fixture = try InterceptFixture(names: [])
        let daemon = try fixture.daemon(intercept: false, ["--ca-dir", fixture.caDir, "--pac-hosts", "*.example.com"])
        let web = try #require(daemon.webPort, "no live view line in: \(daemon.standardError)")
        // Kept after the run, for a person to look at: .build/test-output/screenshots.
        let screenshots = Repository.path(".build/test-output/screenshots")
        try FileManager.default.createDirectory(atPath: screenshots, withIntermediateDirectories: true)

        let browser = Process()
        browser.executableURL = URL(fileURLWithPath: PrometheusScrape.python)
        browser.arguments = [
            Repository.path("Tests/ATSProxyDaemonTests/Browser/pages.py"), "--proxy", "\(daemon.port)", "--web",
            "\(web)",
            "--out", screenshots, "--ca", fixture.caPEM,
        ]
        let input = Pipe()
        let output = Pipe()
        browser.standardInput = input
        browser.standardOutput = output
        browser.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try browser.run()
        defer { if !browser.hasExited { browser.terminate() } }
        let reader = output.fileHandleForReading
        var seen = Data()
        while !String(decoding: seen, as: UTF8.self).contains("READY\n") {
            let chunk = reader.availableData
            guard !chunk.isEmpty else { break }
            seen += chunk
        }
        // The blocked connection: cleartext to a host ATS requires HTTPS for, refused at once.
        let blocked = try runCommand(
            "/usr/bin/curl",
            [
                "-s", "-o", "/dev/null", "-w", "%{http_code}", "--proxy", "http://127.0.0.1:\(daemon.port)",
                "http://blocked.test/",
            ])
        input.fileHandleForWriting.write(Data("go\n".utf8))
        #expect(blocked.standardOutput == "403")
        var rest = Data()
        while true {
            let chunk = reader.availableData
            if chunk.isEmpty { break }
            rest += chunk
        }
        browser.waitForExit()
        let text = String(decoding: seen + rest, as: UTF8.self)
        let json = try #require(
            text.split(separator: "\n").last.flatMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            })
        #expect(json["error"] == nil, "\(json["error"] ?? "")")

        let through = json["through_proxy"] as? [String: Any]
        #expect((through?["text"] as? String)?.localizedCaseInsensitiveContains("connected") == true)
        let direct = json["direct"] as? [String: Any]
        #expect((direct?["text"] as? String)?.contains("127.0.0.1:\(daemon.port)") == true)
        // The check loads only where the CA is trusted (chromium's NSS store stands for the phone's
        // trust switch), and says so; without it, chromium refuses the minted certificate.
        #expect(
            (json["check"] as? [String: Any])?["text"].map { "\($0)".contains("The atsproxy CA is trusted") } == true,
            "\(json["check"] ?? "")")
        let untrusted = json["check_untrusted"] as? [String: Any] ?? [:]
        #expect(!"\(untrusted["text"] ?? "")".contains("The atsproxy CA is trusted"))
        #expect(
            "\(untrusted)".contains("ERR_CERT_AUTHORITY_INVALID") || "\(untrusted["title"] ?? "")" == "Privacy error",
            "\(untrusted)")

        // The downloads as chromium received them: the types iOS and browsers act on, the CA's own bytes.
        let downloads = json["downloads"] as? [[String]] ?? []
        #expect(downloads.count == 3, "\(json["downloads"] ?? "")")
        let types = Dictionary(downloads.map { ($0[0], $0[1]) }, uniquingKeysWith: { first, _ in first })
        #expect(types["/ca.cer"] == "application/pkix-cert")
        #expect(types["/ca.mobileconfig"] == "application/x-apple-aspen-config")
        if let der = downloads.first(where: { $0[0] == "/ca.cer" }).flatMap({ Data(base64Encoded: $0[2]) }) {
            try der.write(to: URL(fileURLWithPath: fixture.directory + "/browser.cer"))
            let served = try fixture.x509(
                fixture.directory + "/browser.cer", ["-inform", "DER", "-fingerprint", "-sha256"])
            #expect(served == (try fixture.x509(fixture.caPEM, ["-fingerprint", "-sha256"])))
        }
        if let pem = downloads.first(where: { $0[0] == "/ca.pem" }).flatMap({ Data(base64Encoded: $0[2]) }) {
            #expect(pem == (try Data(contentsOf: URL(fileURLWithPath: fixture.caPEM))))
        }

        let pac = json["pac"] as? [String: String] ?? [:]
        #expect(pac["https://api.example.com/v1"] == "PROXY 127.0.0.1:\(daemon.port)")
        #expect(pac["https://api.example.com./"] == "PROXY 127.0.0.1:\(daemon.port)")
        #expect(pac["https://gateway.icloud.com/"] == "DIRECT")
        #expect(pac["http://atsproxy.test/"] == "PROXY 127.0.0.1:\(daemon.port)")

        let live = try #require(json["live"] as? [String: Any])
        let seconds = try #require(live["seconds"] as? Double, "the blocked host never showed: \(live)")
        #expect(seconds < 1.0, "the live view showed the blocked host after \(seconds) s")
        #expect((live["reloaded"] as? Int) == 0, "the page was reloaded instead of updated")
        // The plist panel is what `atsproxyctl report` suggests for the same traffic (the daemon's log).
        _ = daemon.logLines(atLeast: 1)
        let report = atsproxyctl("report", daemon.logPath)
        let panel = (live["plist"] as? String ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!panel.isEmpty)
        #expect(report.standardOutput.contains(panel), "panel:\n\(panel)\nreport:\n\(report.standardOutput)")
        #expect(panel.contains("blocked.test"))
        // /metrics on the same listener, as Prometheus scrapes it.
        let scraped = try runCommand("/usr/bin/curl", ["-sS", "--max-time", "10", "http://127.0.0.1:\(web)/metrics"])
        let metrics = try PrometheusScrape(parsing: scraped.standardOutput)
        #expect(
            metrics.families.contains { $0.name == "atsproxy_connections" || $0.name == "atsproxy_connections_total" })
        let hostPage = live["host_page"] as? [String: Any]
        #expect(
            (hostPage?["text"] as? String)?.contains("NSExceptionAllowsInsecureHTTPLoads") == true, "\(hostPage ?? [:])"
        )
        for name in ["onboarding-through-proxy", "onboarding-direct", "check", "live-view", "live-view-host"] {
            #expect(FileManager.default.fileExists(atPath: "\(screenshots)/\(name).png"))
        }
        #expect(daemon.terminate() == 0)
    }
}
