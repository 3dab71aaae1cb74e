import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// The live view against the real daemon: a tunnel that stays open shows from its verdict on, not
/// from its end, in both inspect modes; its connection line then counts it once.
@Suite(.startsProcesses(timeLimit: .seconds(60)))
struct LiveViewProcessTests {
    static func state(_ port: UInt16) throws -> [String: Any] {
        let result = try runCommand(
            "/usr/bin/curl", ["-sS", "--max-time", "10", "http://127.0.0.1:\(port)/api/state.json"])
        return try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
    }

    static func host(_ name: String, in state: [String: Any]) -> [String: Any]? {
        (state["hosts"] as? [[String: Any]])?.first { $0["host"] as? String == name }
    }

    /// `/api/plist?query`: the plist panel for those filters.
    static func plist(_ port: UInt16, _ query: String = "") throws -> [String: Any] {
        let result = try runCommand(
            "/usr/bin/curl", ["-sS", "--max-time", "10", "http://127.0.0.1:\(port)/api/plist?\(query)"])
        return try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
    }

    @Test(
        "a tunnel held open is listed within a second of its verdict; once it ends, one connection",
        arguments: [false, true])
    func openTunnelShows(intercept: Bool) throws {
        let host = "held.live.test"
        let fixture = try InterceptFixture(names: [host])
        try fixture.leaf("leaf", for: [host])
        let server = try TestTLSServer(directory: fixture.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let daemon = try fixture.daemon(intercept: intercept)
        let web = try #require(daemon.webPort)

        // openssl s_client keeps the tunnel open as long as its input is.
        let client = Process()
        client.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        client.arguments =
            [
                "s_client", "-proxy", "127.0.0.1:\(daemon.port)", "-connect", "\(host):\(server.port)", "-servername",
                host, "-no_ign_eof",
            ] + (intercept ? ["-CAfile", fixture.caPEM] : [])
        let input = Pipe()
        client.standardInput = input
        client.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        client.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try client.run()
        defer { if !client.hasExited { client.terminate() } }

        var shown: [String: Any]?
        _ = try eventually {
            shown = Self.host(host, in: try Self.state(web))
            return shown != nil
        }
        let row = try #require(shown, "the open tunnel to \(host) never showed")
        #expect(row["verdict"] as? String == "allowed", "\(row)")
        #expect(daemon.logLines(atLeast: 0).isEmpty, "nothing is logged while the tunnel is open")

        try input.fileHandleForWriting.close()
        client.waitForExit()
        _ = daemon.lines("connection", atLeast: 1)
        // The view takes the log's lines every quarter second: read it once it has taken every line
        // the log holds and the tunnel has left its open connections.
        let logged = daemon.logLines(atLeast: 1).count
        var state: [String: Any] = [:]
        #expect(
            try eventually {
                state = try Self.state(web)
                return state["lines"] as? Int ?? 0 >= logged && state["open_connections"] as? Int == 0
            }, "the view never took the log's \(logged) lines: \(state)")
        let after = try #require(Self.host(host, in: state))
        #expect(after["connections"] as? Int == 1, "\(after)")
        #expect(daemon.terminate() == 0)
    }

    @Test("an app's plist apart from the browser's: curl's -A User-Agent, sent in its CONNECT and its http:// request")
    func plistPerApp() throws {
        let (legacyHost, plainHost) = ("legacy.apps.test", "plain.apps.test")
        let fixture = try InterceptFixture(names: [legacyHost, plainHost])
        try fixture.leaf("leaf", for: [legacyHost])
        let legacy = try TestTLSServer(
            directory: fixture.directory,
            ["-cert", "leaf.pem", "-key", "leaf.key", "-tls1", "-cipher", "ECDHE-RSA-AES128-SHA:@SECLEVEL=0"])
        let origin = try TestHTTPOrigin(directory: fixture.directory)
        let daemon = try fixture.daemon(intercept: false)
        let web = try #require(daemon.webPort)

        // The ATS defaults block both: each is logged with the app its User-Agent named.
        _ = try fixture.curl(
            daemon,
            [
                "-A", "MyApp/1.4.2 CFNetwork/1568.100.1 Darwin/24.0.0", "--tlsv1.0", "--ciphers", "DEFAULT:@SECLEVEL=0",
                "-o", "/dev/null", "https://\(legacyHost):\(legacy.port)/",
            ], trust: fixture.factory.path("root.pem"))
        _ = try fixture.curl(
            daemon,
            [
                "-A", "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15", "-o", "/dev/null",
                "http://\(plainHost):\(origin.port)/",
            ])
        var state: [String: Any] = [:]
        #expect(
            try eventually {
                state = try Self.state(web)
                return Self.host(legacyHost, in: state) != nil && Self.host(plainHost, in: state) != nil
            }, "the view never showed both hosts: \(state)")
        #expect(Self.host(legacyHost, in: state)?["apps"] as? [String] == ["MyApp"], "the CONNECT's User-Agent")
        #expect(Self.host(plainHost, in: state)?["apps"] as? [String] == ["other"], "the http:// request's")

        let myApp = try Self.plist(web, "app=MyApp")
        let myAppPlist = try #require(myApp["plist"] as? String)
        #expect(myAppPlist.contains("<key>\(legacyHost)</key>"), "\(myAppPlist)")
        #expect(myAppPlist.contains("NSExceptionMinimumTLSVersion"))
        #expect(!myAppPlist.contains(plainHost), "\(myAppPlist)")
        #expect(myApp["scope"] as? String == "For MyApp")
        let browserPlist = try #require(try Self.plist(web, "app=other")["plist"] as? String)
        #expect(
            browserPlist.contains("<key>\(plainHost)</key>") && !browserPlist.contains(legacyHost), "\(browserPlist)")
        let every = try Self.plist(web)
        let everyPlist = try #require(every["plist"] as? String)
        #expect(everyPlist.contains("<key>\(legacyHost)</key>") && everyPlist.contains("<key>\(plainHost)</key>"))
        #expect(every["scope"] as? String == "For every app and browser seen so far")
        #expect(daemon.terminate() == 0)
    }
}
