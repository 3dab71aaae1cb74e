import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// What a reload of the config file changes in the proxy's own pages and the web listener:
/// `pac-hosts` in the PAC file; `web-token` for clients beyond loopback; `web-listen` waits for a
/// restart (said in the reload's answer).
@Suite(.startsProcesses(timeLimit: .seconds(60)))
struct WebReloadProcessTests {
    @Test("a reload that changes pac-hosts changes the PAC file; one that changes web-listen needs a restart")
    func pacHostsReload() throws {
        let files = try ConfigFixture()
        let config = try files.write(
            "atsproxy.conf", "listen = 127.0.0.1:0\nweb-listen = 127.0.0.1:0\npac-hosts = first.example\n")
        let daemon = try DaemonProcess(directory: files.directory, ["--config", config, "--threads", "1"])
        func pac() throws -> String {
            try runCommand("/usr/bin/curl", ["-sS", "--max-time", "10", "http://127.0.0.1:\(daemon.port)/proxy.pac"])
                .standardOutput
        }
        #expect(try pac().contains("\"first.example\""))
        try files.write(
            "atsproxy.conf",
            "listen = 127.0.0.1:0\nweb-listen = 127.0.0.1:1\npac-hosts = second.example\npac-hosts = *.third.example\n")
        let reload = atsproxyctl("reload", "--socket", daemon.controlSocket, "--json")
        #expect(reload.exitCode == 0, "\(reload.standardOutput)")
        #expect(reload.standardOutput.contains("pac-hosts"))
        #expect(reload.standardOutput.contains("\"needs_restart\":[\"web-listen\""), "\(reload.standardOutput)")
        let after = try pac()
        #expect(
            after.contains("\"second.example\"") && after.contains("third.example") && !after.contains("first.example"),
            "\(after)")
        // The web listener stays where it was bound.
        let web = try #require(daemon.webPort)
        #expect(
            try runCommand(
                "/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(web)/metrics"]
            ).standardOutput == "200")
        #expect(daemon.terminate() == 0)
    }
}
