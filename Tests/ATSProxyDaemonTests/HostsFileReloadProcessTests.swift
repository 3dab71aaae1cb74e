import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// The real `atsproxy` re-reading its hosts file on reload: two TLS servers for app.test at the same
/// port, one on 127.0.0.1 and one on 127.0.0.2, and the hosts file pointing the name at one, then
/// the other; the log's `upstream` says which one each CONNECT reached.
@Suite("atsproxy reloads its hosts file", .startsProcesses(timeLimit: .seconds(60)))
struct HostsFileReloadProcessTests {
    final class Lab {
        let factory: CertificateFactory
        let first: TestTLSServer
        let second: TestTLSServer
        let configPath: String
        private(set) var daemon: DaemonProcess!

        init() throws {
            factory = try CertificateFactory()
            try factory.rootCA("root")
            try factory.certificate(
                "leaf", issuer: "root", extensions: ["subjectAltName=DNS:app.test", "extendedKeyUsage=serverAuth"])
            let arguments = ["-cert", "leaf.pem", "-key", "leaf.key", "-tls1_3"]
            first = try TestTLSServer(directory: factory.directory, arguments)
            second = try TestTLSServer(directory: factory.directory, arguments, host: "127.0.0.2", port: first.port)
            configPath = factory.path("atsproxy.conf")
        }

        var port: UInt16 { first.port }

        func writeHosts(_ name: String, _ text: String) throws {
            try text.write(toFile: factory.path(name), atomically: true, encoding: .utf8)
        }

        func writeConfig(hostsFile: String) throws {
            let lines = [
                "listen = 127.0.0.1:0", "threads = 2", "system-roots = off", "ca-file = root.pem",
                "hosts-file = \(hostsFile)",
            ]
            try (lines.joined(separator: "\n") + "\n").write(toFile: configPath, atomically: true, encoding: .utf8)
        }

        func start() throws { daemon = try DaemonProcess(directory: factory.directory, ["--config", configPath]) }

        /// curl's status for https://app.test:PORT/ through the proxy, and the `upstream` its log
        /// line names (the `count`-th line).
        func connect(logLine count: Int) throws -> (code: Int, upstream: String?) {
            let result = try curlStatus(
                proxyPort: daemon.port, "https://app.test:\(port)/", ["--cacert", factory.path("root.pem")])
            let lines = daemon.logLines(atLeast: count)
            return (result.code, lines.count >= count ? lines[count - 1]["upstream"] as? String : nil)
        }

        func reload() -> (exitCode: Int32, answer: [String: Any], text: String) {
            let result = atsproxyctl("reload", "--socket", daemon.controlSocket, "--json")
            return (
                result.exitCode, jsonObject(result.standardOutput) ?? [:], result.standardOutput + result.standardError
            )
        }
    }

    @Test("an edited hosts file is applied on reload and the next CONNECT goes to the new address; a changed path too")
    func changedMappingIsApplied() throws {
        let lab = try Lab()
        try lab.writeHosts("hosts", "127.0.0.1 app.test\n")
        try lab.writeConfig(hostsFile: "hosts")
        try lab.start()
        var connected = try lab.connect(logLine: 1)
        #expect(connected.code == 200 && connected.upstream == "127.0.0.1:\(lab.port)", "\(connected)")

        // Same path, other contents: applied, and the verdict cached for app.test (about
        // 127.0.0.1) dropped, so the next CONNECT is probed and tunnelled to 127.0.0.2.
        try lab.writeHosts("hosts", "# moved\n127.0.0.2 app.test\n")
        var reloaded = lab.reload()
        #expect(reloaded.exitCode == 0, "\(reloaded.text)")
        #expect(reloaded.answer["settings_applied"] as? [String] == ["hosts-file"], "\(reloaded.answer)")
        #expect(reloaded.answer["verdicts_dropped"] as? Int == 1, "\(reloaded.answer)")
        connected = try lab.connect(logLine: 2)
        #expect(connected.code == 200 && connected.upstream == "127.0.0.2:\(lab.port)", "\(connected)")

        // Another path: read too.
        try lab.writeHosts("hosts-back", "127.0.0.1 app.test\n")
        try lab.writeConfig(hostsFile: "hosts-back")
        reloaded = lab.reload()
        #expect(reloaded.exitCode == 0, "\(reloaded.text)")
        #expect(reloaded.answer["settings_applied"] as? [String] == ["hosts-file"], "\(reloaded.answer)")
        connected = try lab.connect(logLine: 3)
        #expect(connected.code == 200 && connected.upstream == "127.0.0.1:\(lab.port)", "\(connected)")

        // Unchanged: nothing applied, no verdict dropped.
        reloaded = lab.reload()
        #expect(reloaded.answer["settings_applied"] as? [String] == [], "\(reloaded.answer)")
        #expect(reloaded.answer["verdicts_dropped"] as? Int == 0, "\(reloaded.answer)")
        #expect(lab.daemon.terminate() == 0)
    }

    @Test("a broken hosts file on reload is refused, naming file and line, and the running mapping keeps working")
    func brokenFileIsRefused() throws {
        let lab = try Lab()
        try lab.writeHosts("hosts", "127.0.0.2 app.test\n")
        try lab.writeConfig(hostsFile: "hosts")
        try lab.start()
        var connected = try lab.connect(logLine: 1)
        #expect(connected.code == 200 && connected.upstream == "127.0.0.2:\(lab.port)", "\(connected)")

        try lab.writeHosts("hosts", "127.0.0.1 app.test\n127.0.0.x app.test\n")
        let refused = lab.reload()
        #expect(refused.exitCode != 0, "\(refused.text)")
        let error = refused.answer["error"] as? String ?? ""
        #expect(
            error.contains("hosts-file") && error.contains(lab.factory.path("hosts") + ":2: \"127.0.0.x\""),
            "\(refused.text)")
        #expect(
            lab.daemon.standardErrorLine(containing: "reload (control socket) refused")?.contains("hosts:2") == true,
            "\(lab.daemon.standardError)")

        // Probed again (no cached verdict helps): still by the running table.
        #expect(atsproxyctl("flush-cache", "--socket", lab.daemon.controlSocket).exitCode == 0)
        connected = try lab.connect(logLine: 2)
        #expect(connected.code == 200 && connected.upstream == "127.0.0.2:\(lab.port)", "\(connected)")
        #expect(lab.daemon.terminate() == 0)
    }
}
