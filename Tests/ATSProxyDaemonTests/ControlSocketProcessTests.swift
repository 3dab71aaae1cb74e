import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// The real `atsproxy`'s control socket, through `atsproxyctl`: status, stats, flush-cache,
/// reopen-logs, the socket file itself, and what happens with no daemon.
@Suite("atsproxy's control socket", .startsProcesses(timeLimit: .seconds(60)))
struct ControlSocketProcessTests {
    @Test("status and stats count what went through; flush-cache drops the cached verdicts")
    func statusStatsAndFlush() throws {
        let factory = try CertificateFactory()
        // The daemons' logs, sockets and files live in its directory: keep it until the test ends.
        defer { withExtendedLifetime(factory) {} }
        try factory.rootCA("root")
        try factory.certificate(
            "leaf", issuer: "root", extensions: ["subjectAltName=DNS:secure.test", "extendedKeyUsage=serverAuth"])
        let server = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let origin = try TestHTTPOrigin(directory: factory.directory)
        let hosts = try writeHostsFile(in: factory.directory, ["app.test", "secure.test"])
        let policy = PolicyFile(directory: factory.directory)
        try policy.write(ats: PolicyFile.insecureHTTP(for: "app.test"))
        let daemon = try DaemonProcess(
            directory: factory.directory,
            [
                "--listen", "127.0.0.1:0", "--policy", policy.path, "--hosts-file", hosts, "--ca-file",
                factory.path("root.pem"),
                "--system-roots", "off", "--threads", "2", "--verdict-ttl", "120",
            ])

        // Three allowed (two http:// by the exception, one https:// through a probed tunnel), one blocked.
        #expect(try curlStatus(proxyPort: daemon.port, "http://app.test:\(origin.port)/one").code == 200)
        #expect(try curlStatus(proxyPort: daemon.port, "http://app.test:\(origin.port)/two").code == 200)
        #expect(try curlStatus(proxyPort: daemon.port, "http://blocked.test/").code == 403)
        let https = try curlStatus(
            proxyPort: daemon.port, "https://secure.test:\(server.port)/", ["--cacert", factory.path("root.pem")])
        #expect(https.code == 200, "\(https.error)")
        #expect(daemon.logLines(atLeast: 4).count == 4)
        // The counters follow the log line, and a session's close follows its last byte: wait for both.
        let settled = eventually {
            let stats = daemonStats(daemon.controlSocket)
            return jsonValue(stats, "requests", "allowed") as? Int == 3
                && jsonValue(stats, "connections", "active") as? Int == 0
        }
        #expect(settled, "\(daemonStats(daemon.controlSocket) ?? [:])")

        let status = atsproxyctl("status", "--socket", daemon.controlSocket)
        #expect(status.exitCode == 0, "\(status.standardError)")
        let text = status.standardOutput
        #expect(text.contains("pid \(daemon.pid)"), "\(text)")
        #expect(text.contains("Listening:     127.0.0.1:\(daemon.port) (2 threads)"), "\(text)")
        #expect(text.contains("Mode:          enforce"), "\(text)")
        #expect(text.contains("Policy:        \(policy.path)"), "\(text)")
        #expect(text.contains("sha256 \(try policy.sha256().prefix(16))…"), "\(text)")
        #expect(text.contains("1 exception domain, 0 pinned domains"), "\(text)")
        #expect(text.contains("Connections:   0 open, 4 since start"), "\(text)")
        #expect(text.contains("Requests:      3 allowed, 1 blocked, 0 failed"), "\(text)")
        #expect(text.contains("Verdict cache: 1 entry (kept 120 s)"), "\(text)")
        #expect(text.contains("Last reload:   none since start"), "\(text)")
        #expect(text.contains("Control:       \(daemon.controlSocket)"), "\(text)")
        #expect(text.contains("Log:           \(daemon.logPath)"), "\(text)")

        let statsResult = atsproxyctl("stats", "--socket", daemon.controlSocket, "--json")
        #expect(statsResult.exitCode == 0)
        let stats = try #require(jsonObject(statsResult.standardOutput), "not JSON: \(statsResult.standardOutput)")
        #expect(stats["ok"] as? Bool == true && stats["command"] as? String == "stats")
        #expect(jsonValue(stats, "requests", "allowed") as? Int == 3)
        #expect(jsonValue(stats, "requests", "blocked") as? Int == 1)
        #expect(jsonValue(stats, "requests", "failed") as? Int == 0)
        #expect(jsonValue(stats, "connections", "total") as? Int == 4)
        #expect(jsonValue(stats, "verdict_cache", "entries") as? Int == 1)
        // The bytes are the logged records' sums.
        let lines = daemon.logLines(atLeast: 4)
        #expect(jsonValue(stats, "bytes", "down") as? Int == lines.reduce(0) { $0 + ($1["bytes_down"] as? Int ?? 0) })
        #expect(jsonValue(stats, "bytes", "up") as? Int == lines.reduce(0) { $0 + ($1["bytes_up"] as? Int ?? 0) })

        let flush = atsproxyctl("flush-cache", "--socket", daemon.controlSocket)
        #expect(flush.exitCode == 0)
        #expect(flush.standardOutput == "Dropped 1 cached verdict.\n", "\(flush.standardOutput)")
        let again = jsonObject(atsproxyctl("flush-cache", "--socket", daemon.controlSocket, "--json").standardOutput)
        #expect(again?["dropped"] as? Int == 0, "\(again ?? [:])")
        #expect(jsonValue(daemonStats(daemon.controlSocket), "verdict_cache", "entries") as? Int == 0)

        // The next https:// connection is probed again, and cached again.
        #expect(
            try curlStatus(
                proxyPort: daemon.port, "https://secure.test:\(server.port)/", ["--cacert", factory.path("root.pem")]
            ).code == 200)
        #expect(eventually { jsonValue(daemonStats(daemon.controlSocket), "verdict_cache", "entries") as? Int == 1 })
        #expect(daemon.terminate() == 0)
    }

    @Test(
        "the control socket is a socket with mode 0660; a second daemon on it refuses to start; a stale one is replaced"
    )
    func socketFile() throws {
        let factory = try CertificateFactory()
        // The daemons' logs, sockets and files live in its directory: keep it until the test ends.
        defer { withExtendedLifetime(factory) {} }
        let first = try DaemonProcess(
            directory: factory.directory, ["--listen", "127.0.0.1:0", "--system-roots", "off", "--threads", "1"])
        var info = stat()
        #expect(lstat(first.controlSocket, &info) == 0)
        #expect(info.st_mode & S_IFMT == S_IFSOCK, "not a socket")
        #expect(info.st_mode & 0o7777 == 0o660, "mode \(String(info.st_mode & 0o7777, radix: 8))")

        // A second daemon on the same socket path stops at once, naming the path; the first carries on.
        let second = try runCommand(
            DaemonProcess.executable,
            [
                "--listen", "127.0.0.1:0", "--system-roots", "off", "--threads", "1", "--control-socket",
                first.controlSocket,
                "--log-file", factory.path("second.log"),
            ])
        #expect(second.status != 0, "\(second.standardError)")
        #expect(second.standardError.contains(first.controlSocket), "\(second.standardError)")
        #expect(second.standardError.contains("another process answers on it"), "\(second.standardError)")
        #expect(lstat(first.controlSocket, &info) == 0, "the refused daemon removed the running one's socket")
        let status = jsonObject(atsproxyctl("status", "--socket", first.controlSocket, "--json").standardOutput)
        #expect(status?["pid"] as? Int == Int(first.pid), "\(status ?? [:])")

        // A daemon killed with SIGKILL leaves its socket file behind; the next start replaces it.
        let stalePath = "/tmp/atsproxy-test-stale-\(UUID().uuidString.prefix(8)).sock"
        defer { unlink(stalePath) }
        let killed = try DaemonProcess(
            directory: factory.directory,
            ["--listen", "127.0.0.1:0", "--system-roots", "off", "--threads", "1", "--control-socket", stalePath])
        try withExtendedLifetime(killed) {
            kill(killed.pid, SIGKILL)
            killed.process.waitForExit()
            #expect(lstat(stalePath, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK, "no stale socket file was left")
            #expect(atsproxyctl("status", "--socket", stalePath).exitCode == 3, "a dead daemon's socket answered")
            let next = try DaemonProcess(
                directory: factory.directory,
                ["--listen", "127.0.0.1:0", "--system-roots", "off", "--threads", "1", "--control-socket", stalePath])
            let answer = jsonObject(atsproxyctl("status", "--socket", stalePath, "--json").standardOutput)
            #expect(answer?["pid"] as? Int == Int(next.pid), "\(answer ?? [:])")
            #expect(lstat(stalePath, &info) == 0 && info.st_mode & 0o7777 == 0o660)
            #expect(next.terminate() == 0)
            #expect(access(stalePath, F_OK) != 0, "a daemon that stops removes its socket file")
        }

        // A file that is not a socket is never removed to make room.
        let regularPath = factory.path("not-a-socket")
        try "keep me\n".write(toFile: regularPath, atomically: true, encoding: .utf8)
        let blocked = try runCommand(
            DaemonProcess.executable,
            [
                "--listen", "127.0.0.1:0", "--system-roots", "off", "--threads", "1", "--control-socket", regularPath,
                "--log-file", factory.path("third.log"),
            ])
        #expect(blocked.status != 0, "\(blocked.standardError)")
        #expect(
            blocked.standardError.contains("\(regularPath) (a file that is not a socket is in the way)"),
            "\(blocked.standardError)")
        #expect((try? String(contentsOfFile: regularPath, encoding: .utf8)) == "keep me\n")

        #expect(first.terminate() == 0)
    }

    @Test("reopen-logs and SIGUSR1: after the log file is moved away, new lines go to a new file at the path")
    func reopenLogs() throws {
        let factory = try CertificateFactory()
        // The daemons' logs, sockets and files live in its directory: keep it until the test ends.
        defer { withExtendedLifetime(factory) {} }
        let daemon = try DaemonProcess(
            directory: factory.directory, ["--listen", "127.0.0.1:0", "--system-roots", "off", "--threads", "2"])
        func hosts(_ path: String) -> [String] {
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap {
                (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["host"] as? String
            }
        }
        func request(_ host: String) throws {
            #expect(try curlStatus(proxyPort: daemon.port, "http://\(host)/").code == 403)
        }

        try request("one.test")
        #expect(daemon.logLines(atLeast: 1).count == 1)
        let rotated = daemon.logPath + ".1"
        #expect(rename(daemon.logPath, rotated) == 0)
        // Until told, the daemon writes on to the moved file (as logrotate's window between mv and postrotate).
        try request("two.test")
        #expect(eventually { hosts(rotated) == ["one.test", "two.test"] }, "\(hosts(rotated))")

        let reopened = atsproxyctl("reopen-logs", "--socket", daemon.controlSocket)
        #expect(reopened.exitCode == 0, "\(reopened.standardError)")
        #expect(reopened.standardOutput == "Reopened the log file \(daemon.logPath).\n", "\(reopened.standardOutput)")
        try request("three.test")
        #expect(eventually { hosts(daemon.logPath) == ["three.test"] }, "\(hosts(daemon.logPath))")
        #expect(hosts(rotated) == ["one.test", "two.test"])

        // SIGUSR1 does the same. The daemon opens the new file, then moves it onto the old one's
        // descriptor: once it holds the moved file no more, its lines go to the new one.
        let rotatedAgain = daemon.logPath + ".2"
        #expect(rename(daemon.logPath, rotatedAgain) == 0)
        kill(daemon.pid, SIGUSR1)
        #expect(eventually { access(daemon.logPath, F_OK) == 0 }, "SIGUSR1 did not create a new log file")
        #expect(
            eventually {
                let open = daemon.openFilePaths
                return open.contains(daemon.logPath) && !open.contains(rotatedAgain)
            }, "the daemon still writes to the moved file: \(daemon.openFilePaths)")
        try request("four.test")
        #expect(eventually { hosts(daemon.logPath) == ["four.test"] }, "\(hosts(daemon.logPath))")
        #expect(hosts(rotatedAgain) == ["three.test"])
        #expect(hosts(rotated) == ["one.test", "two.test"])
        #expect(!daemon.process.hasExited, "SIGUSR1 must not stop the daemon")
        #expect(daemon.terminate() == 0)
    }

    @Test(
        "with no daemon on the socket, atsproxyctl exits 3 and names the path",
        arguments: ["status", "reload", "stats"])
    func noDaemon(command: String) {
        let path = "/tmp/atsproxy-test-nonexistent-\(UUID().uuidString.prefix(8)).sock"
        let result = atsproxyctl(command, "--socket", path)
        #expect(result.exitCode == 3)
        #expect(result.standardError.contains("cannot reach atsproxy at \(path)"), "\(result.standardError)")
        #expect(result.standardError.contains("No such file or directory"), "\(result.standardError)")
    }
}
