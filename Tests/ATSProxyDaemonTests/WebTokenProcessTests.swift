import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// The web token end to end, with curl on loopback: a request whose Host names another site needs
/// the token even from 127.0.0.1 (what a DNS-rebinding page sends), so no namespace is needed.
/// The token from `--web-token-file` (read again on reload; an empty or missing file refused,
/// naming it), wrong tokens counted in /metrics, said once, and slowed with 429 after ten.
@Suite(.startsProcesses(timeLimit: .seconds(90)))
struct WebTokenProcessTests {
    static let token = "0123456789abcdef0123456789abcdef"

    /// curl to the web listener as another site's page would reach it: the status code, then the headers.
    static func curl(_ port: UInt16, _ arguments: [String], path: String = "/metrics") throws -> (
        status: String, headers: String
    ) {
        let result = try runCommand(
            "/usr/bin/curl",
            [
                "-s", "-D", "-", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10", "-H",
                "Host: atsproxy.example",
            ]
                + arguments + ["http://127.0.0.1:\(port)\(path)"])
        return (String(result.standardOutput.suffix(3)), result.standardOutput)
    }

    @Test("--web-token-file: the token is read from the file, again on reload; lower-case bearer gets in")
    func tokenFromFile() throws {
        let files = try ConfigFixture()
        let tokenFile = try files.write("web-token", Self.token + "\n")
        let daemon = try DaemonProcess(
            directory: files.directory, ["--listen", "127.0.0.1:0", "--web-token-file", tokenFile, "--threads", "1"])
        let web = try #require(daemon.webPort)
        #expect(try Self.curl(web, []).status == "401")
        #expect(try Self.curl(web, ["-H", "Authorization: bearer \(Self.token)"]).status == "200")
        #expect(try Self.curl(web, ["-H", "Authorization: BEARER \(Self.token)"]).status == "200")
        let next = "fedcba9876543210fedcba9876543210"
        _ = try files.write("web-token", "  \(next)  \n")
        let reload = atsproxyctl("reload", "--socket", daemon.controlSocket, "--json")
        #expect(reload.exitCode == 0, "\(reload.standardOutput)")
        #expect(try Self.curl(web, ["-H", "Authorization: Bearer \(next)"]).status == "200")
        #expect(try Self.curl(web, ["-H", "Authorization: Bearer \(Self.token)"]).status == "401")
        // An emptied file: the reload is refused, naming the file, and the token in force stays.
        _ = try files.write("web-token", "\n")
        let refused = atsproxyctl("reload", "--socket", daemon.controlSocket, "--json")
        #expect(refused.standardOutput.contains(tokenFile), "\(refused.standardOutput)")
        #expect(try Self.curl(web, ["-H", "Authorization: Bearer \(next)"]).status == "200")
        #expect(daemon.terminate() == 0)
    }

    @Test("a start with an empty, missing or doubly given token file is refused, naming the file")
    func unusableTokenFile() throws {
        let files = try ConfigFixture()
        let empty = try files.write("empty-token", "")
        let missing = files.directory + "/no-such-token"
        for (arguments, expected) in [
            (["--web-token-file", empty], [empty, "empty"]),
            (["--web-token-file", missing], [missing]),
            (["--web-token-file", empty, "--web-token", Self.token], ["web-token-file", "web-token is given too"]),
        ] {
            let result = try runCommand(
                DaemonProcess.executable,
                [
                    "--listen", "127.0.0.1:0", "--web-listen", "127.0.0.1:0", "--control-socket",
                    "/tmp/atsproxy-unused.sock",
                ]
                    + arguments, timeLimit: 20)
            #expect(result.status != 0)
            for text in expected { #expect(result.standardError.contains(text), "\(result.standardError)") }
        }
    }

    @Test("wrong tokens: each 401 and counted, said once, and after ten the address gets 429 with Retry-After")
    func wrongTokensSlowed() throws {
        let factory = try CertificateFactory()
        defer { withExtendedLifetime(factory) {} }
        let daemon = try DaemonProcess(
            directory: factory.directory, ["--listen", "127.0.0.1:0", "--web-token", Self.token, "--threads", "1"])
        let web = try #require(daemon.webPort)
        for attempt in 0..<10 {
            #expect(try Self.curl(web, ["-H", "Authorization: Bearer wrong-guess-\(attempt)"]).status == "401")
        }
        // The right token is not even looked at now.
        let slowed = try Self.curl(web, ["-H", "Authorization: Bearer \(Self.token)"])
        #expect(slowed.status == "429")
        #expect(slowed.headers.lowercased().contains("retry-after: "), "\(slowed.headers)")
        // This machine's own page still opens.
        let local = try runCommand(
            "/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(web)/"])
        #expect(local.standardOutput == "200")
        let scrape = try PrometheusScrape(socket: daemon.controlSocket)
        #expect(scrape.value("atsproxy_web_token_failures_total") == 10)
        #expect(scrape.value("atsproxy_web_token_slowed_total") == 1)
        let said = daemon.standardError.components(separatedBy: "refused a wrong token").count - 1
        #expect(said == 1, "\(daemon.standardError)")
        #expect(daemon.terminate() == 0)
    }
}
