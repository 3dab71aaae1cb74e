import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// Which app made each connection (issue 29, item 1), end to end: curl stands for the apps, sending
/// URLSession's default User-Agent of one app or a browser's, through a real daemon to real
/// servers; the lines name the app, and `report` and `har` keep one app's traffic apart.
@Suite("Which app made each connection", .startsProcesses(timeLimit: .seconds(90)))
struct AppAttributionProcessTests {
    static let myApp = "MyApp/1.4.2 CFNetwork/1568.100.1 Darwin/24.0.0"
    static let safari =
        "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1"

    /// The `app` object of a line, as the tests compare it.
    static func app(_ line: [String: Any]) -> [String: String?]? {
        guard let app = line["app"] as? [String: Any] else { return nil }
        return app.mapValues { $0 as? String }
    }

    @Test(
        "tunnel mode: the CONNECT's User-Agent names the app; report --app keeps one app's hosts apart from the browser's"
    )
    func tunnelMode() throws {
        let legacyHost = "legacy.apps.test"
        let fixture = try InterceptFixture(names: [legacyHost, "plain.apps.test"])
        try fixture.leaf("leaf", for: [legacyHost])
        let legacy = try TestTLSServer(
            directory: fixture.directory,
            ["-cert", "leaf.pem", "-key", "leaf.key", "-tls1", "-cipher", "ECDHE-RSA-AES128-SHA:@SECLEVEL=0"])
        let origin = try TestHTTPOrigin(directory: fixture.directory)
        // Report mode: every load goes through, and is judged and logged.
        let daemon = try fixture.daemon(intercept: false, ["--mode", "report"])
        let app = try fixture.curl(
            daemon,
            ["-o", "/dev/null", "-A", Self.myApp, "--tlsv1.0", "--ciphers", "DEFAULT:@SECLEVEL=0"]
                + ["--cacert", fixture.factory.path("root.pem"), "https://\(legacyHost):\(legacy.port)/"])
        #expect(app.status == 0, "\(app.standardError)")
        let browser = try fixture.curl(
            daemon, ["-o", "/dev/null", "-A", Self.safari, "http://plain.apps.test:\(origin.port)/"])
        #expect(browser.status == 0, "\(browser.standardError)")
        let anonymous = try fixture.curl(
            daemon, ["-o", "/dev/null", "-A", "", "http://plain.apps.test:\(origin.port)/"])
        #expect(anonymous.status == 0, "\(anonymous.standardError)")

        let lines = daemon.lines("connection", atLeast: 3)
        try #require(lines.count == 3, "\(lines)")
        let byHost = Dictionary(grouping: lines) { $0["host"] as? String ?? "" }
        let connect = try #require(byHost[legacyHost]?.first)
        #expect(
            Self.app(connect)
                == [
                    "kind": "app", "name": "MyApp", "version": "1.4.2", "cfnetwork": "1568.100.1", "darwin": "24.0.0",
                    "ios": "18.0", "user_agent": Self.myApp,
                ], "\(connect)")
        let plain = byHost["plain.apps.test"] ?? []
        #expect(plain.compactMap { Self.app($0)?["kind"] ?? nil } == ["other"], "\(plain)")
        #expect(plain.contains { Self.app($0)?["user_agent"] == Self.safari }, "\(plain)")
        #expect(plain.contains { $0["app"] is NSNull }, "curl -A '' sends no User-Agent: \(plain)")

        /// The suggested exception domains of `report` with `options`.
        func domains(_ options: String...) throws -> Set<String> {
            let result = ATSProxyCtl.run(["report", daemon.logPath, "--json"] + options)
            try #require(result.exitCode == 0, "\(result.standardError)")
            let domains = jsonValue(
                jsonObject(result.standardOutput), "suggested", "NSAppTransportSecurity", "NSExceptionDomains")
            return Set((domains as? [String: Any] ?? [:]).keys)
        }
        #expect(try domains() == [legacyHost, "plain.apps.test"])
        #expect(try domains("--app", "MyApp") == [legacyHost])
        #expect(try domains("--app", "myapp") == [legacyHost], "names match in any case")
        #expect(try domains("--app", "other") == ["plain.apps.test"])
        #expect(try domains("--host", "plain.apps.test") == ["plain.apps.test"])
        #expect(try domains("--client", "127.0.0.1", "--app", "MyApp") == [legacyHost])
        #expect(try domains("--client", "192.0.2.1").isEmpty)

        let none = atsproxyctl("report", daemon.logPath, "--app", "NoSuchApp")
        #expect(none.exitCode == 0)
        #expect(none.standardError.contains("the apps seen: MyApp, other"), "\(none.standardError)")
        #expect(none.standardError.contains("1 connection line named no app"), "\(none.standardError)")
        let classNamed = atsproxyctl("report", daemon.logPath, "--client", "webkit")
        #expect(classNamed.exitCode == 2)
        #expect(classNamed.standardError.contains("--client-class webkit"), "\(classNamed.standardError)")
        #expect(daemon.terminate() == 0)
    }

    @Test(
        "intercept mode: each request's own User-Agent, over HTTP/1.1 and HTTP/2; a CONNECT without one takes its first request's; har --app"
    )
    func interceptMode() throws {
        let host = "nginx.apps.test"
        let fixture = try InterceptFixture(names: [host])
        try fixture.leaf("leaf", for: [host])
        let nginx = try TestNginx(directory: fixture.directory, certificates: ["leaf"], http2: true)
        let daemon = try fixture.daemon()
        let url = "https://\(host):\(nginx.ports[0])/"
        // The CONNECT carries no User-Agent (curl's --proxy-header removes it); the requests do.
        let http1 = try fixture.curl(
            daemon,
            ["--http1.1", "-o", "/dev/null", "-o", "/dev/null", "-A", Self.myApp, "--proxy-header", "User-Agent:"]
                + [url, url])
        #expect(http1.status == 0, "\(http1.standardError)")
        let http2 = try fixture.curl(daemon, ["--http2", "-o", "/dev/null", "-A", Self.safari, url])
        #expect(http2.status == 0, "\(http2.standardError)")

        let requests = daemon.lines("request", atLeast: 3)
        try #require(requests.count == 3, "\(requests)")
        let versions = requests.map { $0["http_version"] as? String ?? "" }
        #expect(Set(versions) == ["HTTP/1.1", "HTTP/2"], "\(versions)")
        for request in requests {
            let expected = request["http_version"] as? String == "HTTP/2" ? "other" : "MyApp"
            let app = Self.app(request)
            #expect((app?["kind"] == "other" ? "other" : app?["name"] ?? nil) == expected, "\(request)")
        }
        let connections = daemon.lines("connection", atLeast: 2)
        try #require(connections.count == 2, "\(connections)")
        let names = connections.map { line in Self.app(line).map { $0["name"] ?? nil } ?? nil }
        // The first connection's CONNECT named no app: its line takes its first request's.
        #expect(names.contains("MyApp"), "\(connections)")

        func entries(_ options: String...) -> Int? {
            let har = ATSProxyCtl.run(["har", daemon.logPath] + options)
            let entries = jsonValue(jsonObject(har.standardOutput), "log", "entries") as? [[String: Any]]
            return entries?.count
        }
        #expect(entries() == 3)
        #expect(entries("--app", "MyApp") == 2)
        #expect(entries("--app", "other") == 1)
        #expect(entries("--app", "MyApp", "--host", "elsewhere.test") == 0)
        let har = atsproxyctl("har", daemon.logPath, "--app", "MyApp")
        let first = (jsonValue(jsonObject(har.standardOutput), "log", "entries") as? [[String: Any]])?.first
        #expect(jsonValue(first, "_ats", "app", "ios") as? String == "18.0", "\(String(describing: first))")
        #expect(daemon.terminate() == 0)
    }
}
