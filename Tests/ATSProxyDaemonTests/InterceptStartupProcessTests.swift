import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// Intercept mode's CA at start and at reload: a missing CA or a key others can read stops the
/// start with a message naming the file; a reload that would turn intercept on without a CA is
/// refused, and the daemon goes on as it was.
@Suite("Intercept mode's CA at start and reload", .startsProcesses(timeLimit: .seconds(60)))
struct InterceptStartupProcessTests {
    /// Runs the daemon in intercept mode with `caDir`, expecting it to exit: its status and stderr.
    static func start(_ fixture: InterceptFixture, caDir: String) throws -> CommandResult {
        try runCommand(
            DaemonProcess.executable,
            [
                "--listen", "127.0.0.1:0", "--policy", fixture.policy.path, "--ca-file",
                fixture.factory.path("root.pem"),
                "--system-roots", "off", "--inspect", "intercept", "--ca-dir", caDir,
                "--log-file", fixture.factory.path("start.log"),
                "--control-socket", "/tmp/atsproxy-test-\(UUID().uuidString.prefix(8)).sock",
            ], timeLimit: 15)
    }

    @Test("--inspect intercept with a missing CA directory: exits non-zero naming it, and the command that makes one")
    func missingCA() throws {
        let fixture = try InterceptFixture(names: [])
        let missing = fixture.factory.path("no-such-ca")
        let result = try Self.start(fixture, caDir: missing)
        #expect(result.status != 0 && !result.killed, "\(result.standardError)")
        #expect(result.standardError.contains(missing), "\(result.standardError)")
        #expect(result.standardError.contains("atsproxyctl ca init --dir \(missing)"), "\(result.standardError)")
    }

    @Test("--inspect intercept with ca.key mode 0644: refused, naming the file")
    func readableKey() throws {
        let fixture = try InterceptFixture(names: [])
        let key = fixture.caDir + "/ca.key"
        #expect(chmod(key, 0o644) == 0)
        let result = try Self.start(fixture, caDir: fixture.caDir)
        #expect(result.status != 0 && !result.killed, "\(result.standardError)")
        #expect(result.standardError.contains(key), "\(result.standardError)")
    }

    @Test("a reload turning a tunnel-mode daemon without a CA to intercept is refused; the daemon keeps tunnelling")
    func reloadToInterceptWithoutCA() throws {
        let host = "reload.intercept.test"
        let fixture = try InterceptFixture(names: [host])
        try fixture.leaf("leaf", for: [host])
        let server = try TestTLSServer(directory: fixture.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let config = fixture.factory.path("atsproxy.conf")
        let common = """
            listen = 127.0.0.1:0
            policy = \(fixture.policy.path)
            hosts-file = \(fixture.hostsFile)
            ca-file = \(fixture.factory.path("root.pem"))
            system-roots = off
            threads = 2

            """
        try common.write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try DaemonProcess(directory: fixture.directory, ["--config", config])
        let url = "https://\(host):\(server.port)/"
        let root = fixture.factory.path("root.pem")
        #expect(try fixture.curl(daemon, ["-o", "/dev/null", url], trust: root).status == 0)

        try (common + "inspect = intercept\nca-dir = \(fixture.factory.path("no-such-ca"))\n")
            .write(toFile: config, atomically: true, encoding: .utf8)
        let reload = atsproxyctl("reload", "--socket", daemon.controlSocket)
        #expect(reload.exitCode != 0, "\(reload.standardOutput) \(reload.standardError)")
        let said = (reload.standardOutput + reload.standardError).lowercased()
        #expect(said.contains("ca") && said.contains("intercept"), "\(said)")

        // Still a tunnel: curl trusting only the test root gets the origin through it.
        let after = try fixture.curl(daemon, ["-o", "/dev/null", "-w", "%{http_code}", url], trust: root)
        #expect(after.status == 0 && after.standardOutput == "200", "\(after.standardError)")
        let lines = daemon.lines("connection", atLeast: 2)
        #expect(lines.count == 2 && lines.allSatisfy { $0["inspect"] is NSNull && $0.action == "allowed" }, "\(lines)")
        #expect(!daemon.process.hasExited)
        #expect(daemon.terminate() == 0)
    }
}
