import Foundation
import TLSTestSupport
import Testing

/// `atsproxy --config` and `--check-config` as a user runs them.
@Suite("atsproxy config file as a process", .startsProcesses(timeLimit: .seconds(60)))
struct ConfigProcessTests {
    @Test("--check-config passes the shipped file, prints a summary and exits 0")
    func checkPasses() throws {
        let policy = Repository.path("config/ats-defaults.plist")
        let result = try runCommand(
            DaemonProcess.executable,
            [
                "--check-config", "--config", Repository.path("config/atsproxy.conf"), "--policy", policy,
            ])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.contains("config file: \(Repository.path("config/atsproxy.conf"))"))
        #expect(result.standardOutput.contains("policy: \(policy) (xml plist, sha256 "), "\(result.standardOutput)")
        #expect(result.standardOutput.contains("listen: 127.0.0.1:8080 (urlsession)"))
        #expect(result.standardOutput.contains("mode: enforce"))
        #expect(result.standardOutput.hasSuffix("configuration OK\n"))
    }

    @Test("--check-config on a broken file exits 1 and names file, line and key on stderr")
    func checkFailsOnBrokenFile() throws {
        let fixture = try ConfigFixture()
        let path = try fixture.write("atsproxy.conf", "listen = 127.0.0.1:0\nmode = enforec\n")
        let result = try runCommand(DaemonProcess.executable, ["--check-config", "--config", path])
        #expect(result.status == 1)
        #expect(result.standardOutput.isEmpty)
        #expect(
            result.standardError.contains("\(path):2: key 'mode': \"enforec\" is not one of: enforce, report"),
            "\(result.standardError)")
    }

    @Test("--check-config names the config line of a policy that does not parse")
    func checkFailsOnBrokenPolicy() throws {
        let fixture = try ConfigFixture()
        try fixture.write(
            "Info.plist", "<plist><dict><key>NSAppTransportSecurity</key><string>no</string></dict></plist>")
        let path = try fixture.write("atsproxy.conf", "# policy next\npolicy = Info.plist\n")
        let result = try runCommand(DaemonProcess.executable, ["--check-config", "--config", path])
        #expect(result.status == 1)
        #expect(
            result.standardError.contains("\(path):2: key 'policy': \(fixture.path("Info.plist"))"),
            "\(result.standardError)")
    }

    @Test("--check-config binds nothing: a listen address already in use still passes")
    func checkBindsNothing() throws {
        let fixture = try ConfigFixture()
        let held = try DaemonProcess(
            directory: fixture.directory, ["--listen", "127.0.0.1:0", "--system-roots", "off"])
        let path = try fixture.write("atsproxy.conf", "listen = 127.0.0.1:\(held.port)\n")
        let result = try runCommand(DaemonProcess.executable, ["--check-config", "--config", path])
        #expect(held.terminate() == 0)
        #expect(result.status == 0, "\(result.standardError)")
    }

    @Test("a daemon started with --config listens, judges and times out as the file says")
    func daemonUsesTheFile() throws {
        let fixture = try ConfigFixture()
        let path = try fixture.write(
            "atsproxy.conf",
            """
            listen = 127.0.0.1:0   # the kernel picks the port
            mode = report
            threads = 1
            system-roots = off
            head-timeout = 1
            """)
        let daemon = try DaemonProcess(directory: fixture.directory, ["--config", path])
        #expect(daemon.standardError.contains("with 1 thread, report mode"), "\(daemon.standardError)")
        // An unfinished head: the file's 1-second limit answers 408 long before the default 10 seconds.
        let client = try #require(connectLoopback(port: daemon.port))
        defer { close(client) }
        let partial = Array("GET http://example.test/ HTTP/1.1\r\nHost: example.test\r\n".utf8)
        _ = partial.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        let answer = receiveAvailable(client, wait: 5).map { String(decoding: $0, as: UTF8.self) } ?? ""
        #expect(daemon.terminate() == 0)
        #expect(answer.hasPrefix("HTTP/1.1 408"), "\(answer)")
    }
}
