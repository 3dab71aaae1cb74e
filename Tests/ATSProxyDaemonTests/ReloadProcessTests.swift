import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// Reloading the real `atsproxy`: through `atsproxyctl reload` and SIGHUP, with good and broken
/// policy files, while traffic flows, and what systemd hears about it.
@Suite("atsproxy reloads its policy", .startsProcesses(timeLimit: .seconds(60)))
struct ReloadProcessTests {
    /// A daemon judging by a policy file in a scratch directory (the ATS defaults at first), with
    /// `app.test` in its hosts file and a plain-HTTP origin to reach under that name.
    final class Setup {
        let factory: CertificateFactory
        let policy: PolicyFile
        let origin: TestHTTPOrigin
        let daemon: DaemonProcess

        init() throws {
            factory = try CertificateFactory()
            policy = PolicyFile(directory: factory.directory)
            try policy.write(ats: "")
            let hosts = try writeHostsFile(in: factory.directory, ["app.test"])
            origin = try TestHTTPOrigin(directory: factory.directory)
            daemon = try DaemonProcess(
                directory: factory.directory,
                [
                    "--listen", "127.0.0.1:0", "--policy", policy.path, "--hosts-file", hosts, "--system-roots", "off",
                    "--threads", "2",
                ])
        }

        /// curl's status for http://app.test:PORT/ through the proxy: 403 under the ATS defaults,
        /// 200 once an exception allows insecure HTTP loads for app.test.
        func curl() throws -> Int {
            let result = try curlStatus(proxyPort: daemon.port, "http://app.test:\(origin.port)/")
            if result.code == 0 { Issue.record("curl got no answer: \(result.error)") }
            return result.code
        }

        func reload() -> ATSProxyCtl.Result { atsproxyctl("reload", "--socket", daemon.controlSocket) }
    }

    @Test(
        "atsproxyctl reload applies a good policy and says what changed; a broken one is refused and the old one stays")
    func reloadGoodThenBroken() throws {
        let setup = try Setup()
        let (daemon, policy) = (setup.daemon, setup.policy)
        #expect(try setup.curl() == 403, "the ATS defaults block http://")

        let defaultsHash = try policy.sha256()
        try policy.write(ats: PolicyFile.insecureHTTP(for: "app.test"))
        let goodHash = try policy.sha256()
        let applied = setup.reload()
        #expect(applied.exitCode == 0, "\(applied.standardError)")
        #expect(
            applied.standardOutput.contains(
                "+ NSExceptionDomains › app.test › NSExceptionAllowsInsecureHTTPLoads = true"),
            "\(applied.standardOutput)")
        #expect(
            applied.standardOutput.contains("sha256 \(goodHash.prefix(16))… (was \(defaultsHash.prefix(16))…)"),
            "\(applied.standardOutput)")
        #expect(try setup.curl() == 200, "the reloaded exception allows http:// to app.test")

        // Not a property list at all: refused with the file and the position, exit status 1.
        try policy.write(raw: PolicyFile.truncated)
        let broken = setup.reload()
        #expect(broken.exitCode == 1, "\(broken.standardOutput)")
        #expect(broken.standardError.contains("\(policy.path): line "), "\(broken.standardError)")
        #expect(broken.standardError.contains("not a property list"), "\(broken.standardError)")
        #expect(
            broken.standardError.contains("The running policy and settings stay in force."), "\(broken.standardError)")
        // The same place atsproxyctl check names for the file.
        let check = atsproxyctl("check", policy.path)
        #expect(check.exitCode == 2, "\(check.standardOutput)")
        let place = try #require(
            check.standardError.firstRange(of: /line \d+, column \d+/).map { check.standardError[$0] })
        #expect(
            broken.standardError.contains("\(policy.path): \(place): "), "check says \(place): \(broken.standardError)")
        #expect(try setup.curl() == 200, "the running policy must stay after a refused reload")
        let afterBroken = daemonStatus(daemon.controlSocket)
        #expect(jsonValue(afterBroken, "last_reload", "ok") as? Bool == false, "\(afterBroken ?? [:])")
        #expect(jsonValue(afterBroken, "last_reload", "trigger") as? String == "control socket")
        #expect((jsonValue(afterBroken, "last_reload", "error") as? String)?.contains(policy.path) == true)
        #expect(
            jsonValue(afterBroken, "policy", "sha256") as? String == goodHash,
            "the status must show the policy in force")

        // A plist PolicyLoader refuses: NSAppTransportSecurity of the wrong type (a string). Wrong
        // types further in are findings that ATS ignores (atsproxyctl check reports them), not load errors.
        try policy.write(raw: PolicyFile.atsNotADictionary)
        let wrongType = setup.reload()
        #expect(wrongType.exitCode == 1, "\(wrongType.standardOutput)")
        #expect(wrongType.standardError.contains("\(policy.path): line 3"), "\(wrongType.standardError)")
        #expect(
            wrongType.standardError.contains("NSAppTransportSecurity is a string, not a dictionary"),
            "\(wrongType.standardError)")
        #expect(try setup.curl() == 200)
        let afterWrongType = daemonStatus(daemon.controlSocket)
        #expect(jsonValue(afterWrongType, "last_reload", "ok") as? Bool == false)
        #expect(jsonValue(afterWrongType, "policy", "sha256") as? String == goodHash)
        #expect(jsonValue(afterWrongType, "policy", "exception_domains") as? Int == 1)

        // The daemon said each outcome on stderr as well, and logged every request by the rule in force.
        #expect(daemon.standardErrorCount(of: "atsproxy: reloaded (control socket)") == 1, "\(daemon.standardError)")
        #expect(
            daemon.standardErrorCount(of: "atsproxy: reload (control socket) refused") == 2, "\(daemon.standardError)")
        let lines = daemon.logLines(atLeast: 4)
        #expect(lines.map { $0["action"] as? String ?? "?" } == ["blocked", "allowed", "allowed", "allowed"])
        #expect(daemon.terminate() == 0)
    }

    @Test("a policy with a mistyped key is applied as iOS applies it, and the reload lists what it ignored")
    func reloadWithFindings() throws {
        let setup = try Setup()
        try setup.policy.write(
            ats: "<key>NSAllowsArbitraryLoad</key><true/>" + PolicyFile.insecureHTTP(for: "app.test"))
        let applied = setup.reload()
        #expect(applied.exitCode == 0, "\(applied.standardError)")
        #expect(
            applied.standardOutput.contains("Policy findings (applied as iOS would, ignoring what it ignores):"),
            "\(applied.standardOutput)")
        #expect(applied.standardOutput.contains("warning: line "), "\(applied.standardOutput)")
        #expect(applied.standardOutput.contains("NSAllowsArbitraryLoad"), "\(applied.standardOutput)")
        #expect(try setup.curl() == 200, "the rest of the policy applies")
        let json = atsproxyctl("reload", "--socket", setup.daemon.controlSocket, "--json")
        let findings = try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any]
        #expect((findings?["policy_findings"] as? [Any])?.count == 1, "\(json.standardOutput)")
        #expect(
            setup.daemon.standardErrorCount(of: "1 policy finding: run atsproxyctl check") == 2,
            "\(setup.daemon.standardError)")
    }

    @Test("SIGHUP reloads as the control socket does, and says so on stderr")
    func hangUpSignal() throws {
        let setup = try Setup()
        let (daemon, policy) = (setup.daemon, setup.policy)
        #expect(try setup.curl() == 403)

        try policy.write(ats: PolicyFile.insecureHTTP(for: "app.test"))
        let goodHash = try policy.sha256()
        kill(daemon.pid, SIGHUP)
        let reloaded = try #require(
            daemon.standardErrorLine(containing: "atsproxy: reloaded (SIGHUP)"), "\(daemon.standardError)")
        #expect(reloaded.contains(policy.path) && reloaded.contains("1 policy key changed"), "\(reloaded)")
        #expect(try setup.curl() == 200)

        try policy.write(raw: PolicyFile.truncated)
        kill(daemon.pid, SIGHUP)
        let refused = try #require(
            daemon.standardErrorLine(containing: "atsproxy: reload (SIGHUP) refused"), "\(daemon.standardError)")
        #expect(refused.contains("the running policy stays"), "\(refused)")
        #expect(refused.contains("\(policy.path): line ") && refused.contains("not a property list"), "\(refused)")
        #expect(try setup.curl() == 200)

        let status = daemonStatus(daemon.controlSocket)
        #expect(jsonValue(status, "last_reload", "trigger") as? String == "SIGHUP", "\(status ?? [:])")
        #expect(jsonValue(status, "last_reload", "ok") as? Bool == false)
        #expect(jsonValue(status, "policy", "sha256") as? String == goodHash)
        #expect(!daemon.process.hasExited, "SIGHUP must not stop the daemon")
        #expect(daemon.terminate() == 0)
    }

    @Test("a large TLS download through a tunnel arrives byte-exact across reloads, good and refused")
    func transferAcrossReloads() throws {
        let factory = try CertificateFactory()
        // The daemons' logs, sockets and files live in its directory: keep it until the test ends.
        defer { withExtendedLifetime(factory) {} }
        try factory.rootCA("root")
        try factory.certificate(
            "leaf", issuer: "root", extensions: ["subjectAltName=DNS:files.test", "extendedKeyUsage=serverAuth"])
        let size = 48 * 1_048_576
        try factory.openssl(["rand", "-out", "big.bin", "\(size)"])
        let original = factory.path("big.bin")
        // -WWW (after the -www TestTLSServer passes) serves files from the directory.
        let server = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key", "-WWW"])
        let hosts = try writeHostsFile(in: factory.directory, ["files.test"])
        let policy = PolicyFile(directory: factory.directory)
        // Two policies that both allow files.test (the ATS defaults; an exception that still asks for
        // TLS 1.2), and a broken one.
        let defaults = ""
        let exception =
            "<key>NSExceptionDomains</key><dict><key>files.test</key><dict>"
            + "<key>NSExceptionMinimumTLSVersion</key><string>TLSv1.2</string></dict></dict>"
        try policy.write(ats: defaults)
        let daemon = try DaemonProcess(
            directory: factory.directory,
            [
                "--listen", "127.0.0.1:0", "--policy", policy.path, "--hosts-file", hosts, "--ca-file",
                factory.path("root.pem"),
                "--system-roots", "off", "--threads", "2",
            ])

        // 48 MiB at 10 MiB/s: about five seconds in flight.
        let downloaded = factory.path("downloaded.bin")
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = [
            "-sS", "--max-time", "180", "--proxy", "http://127.0.0.1:\(daemon.port)", "--cacert",
            factory.path("root.pem"),
            "--limit-rate", "10M", "-o", downloaded, "https://files.test:\(server.port)/big.bin",
        ]
        let curlErrors = factory.path("curl.err")
        _ = FileManager.default.createFile(atPath: curlErrors, contents: nil)
        curl.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: curlErrors))
        curl.standardOutput = FileHandle.nullDevice
        try curl.run()
        defer { if !curl.hasExited { kill(curl.processIdentifier, SIGKILL) } }

        func bytesDownloaded() -> Int {
            ((try? FileManager.default.attributesOfItem(atPath: downloaded))?[.size] as? NSNumber)?.intValue ?? 0
        }
        #expect(eventually(timeout: 60) { bytesDownloaded() > 1_048_576 }, "the download did not start")

        // Reloads while the bytes flow: each one counts only if the download was still under way after it.
        var statuses: [Int32] = []
        var duringTransfer = 0
        for (index, text) in [exception, nil, defaults, nil, exception].enumerated() {
            if let text { try policy.write(ats: text) } else { try policy.write(raw: PolicyFile.truncated) }
            let result = atsproxyctl("reload", "--socket", daemon.controlSocket)
            statuses.append(result.exitCode)
            if !curl.hasExited, bytesDownloaded() < size { duringTransfer += 1 }
            // The scenario: reloads spread over the download, not all at its start.
            if index < 4 { Thread.sleep(forTimeInterval: 0.3) }
        }
        #expect(statuses == [0, 1, 0, 1, 0])
        #expect(duringTransfer >= 3, "only \(duringTransfer) reloads happened while the download was in flight")

        #expect(waitForExit(curl, timeout: 180), "curl did not finish")
        let curlStatus = curl.waitForExit()
        let curlMessage = (try? String(contentsOfFile: curlErrors, encoding: .utf8)) ?? ""
        #expect(curlStatus == 0, "\(curlMessage)")
        #expect(bytesDownloaded() == size)
        #expect(try sha256sum(downloaded) == sha256sum(original), "the download is not byte-exact")

        let record = try #require(daemon.logLines(atLeast: 1).first { $0["method"] as? String == "CONNECT" })
        #expect(record["action"] as? String == "allowed", "\(record)")
        #expect(record["upstream_error"] is NSNull, "\(record)")
        // TLS records add a few dozen bytes per 16 KiB, and the handshake a few KiB: a little over the file.
        let bytesDown = try #require(record["bytes_down"] as? Int)
        #expect(
            bytesDown > size && bytesDown < size + size / 100 + 65_536,
            "bytes_down \(bytesDown) for a \(size)-byte file")
        #expect(daemon.terminate() == 0)
    }

    @Test("a reload tells systemd RELOADING=1 with MONOTONIC_USEC, then READY=1, refused or not")
    func notifiesSystemd() throws {
        let factory = try CertificateFactory()
        // The daemons' logs, sockets and files live in its directory: keep it until the test ends.
        defer { withExtendedLifetime(factory) {} }
        let notify = try NotifySocket(directory: factory.directory)
        let policy = PolicyFile(directory: factory.directory)
        try policy.write(ats: "")
        let daemon = try DaemonProcess(
            directory: factory.directory,
            ["--listen", "127.0.0.1:0", "--policy", policy.path, "--system-roots", "off", "--threads", "1"],
            environment: ["NOTIFY_SOCKET": notify.address])
        let started = NotifySocket.fields(try #require(notify.receive(), "no READY=1 at start"))
        #expect(started.first?.key == "READY", "\(started)")

        func monotonicMicroseconds() -> Int64 {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            return Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000
        }

        /// One reload's two messages: RELOADING=1 stamped between `before` and `after`, then READY=1.
        func expectReloadMessages(before: Int64, after: Int64, refused: Bool) throws {
            let reloading = NotifySocket.fields(try #require(notify.receive(), "no RELOADING=1"))
            #expect(reloading.first?.key == "RELOADING" && reloading.first?.value == "1", "\(reloading)")
            let stamp = try #require(Int64(reloading.first { $0.key == "MONOTONIC_USEC" }?.value ?? ""), "\(reloading)")
            // CLOCK_MONOTONIC is the same clock in every process: the stamp falls inside the reload.
            #expect(stamp >= before && stamp <= after, "MONOTONIC_USEC \(stamp) outside \(before)…\(after)")
            let ready = NotifySocket.fields(try #require(notify.receive(), "no READY=1 after RELOADING=1"))
            #expect(ready.first?.key == "READY" && ready.first?.value == "1", "\(ready)")
            let status = ready.first { $0.key == "STATUS" }?.value ?? ""
            #expect(status.contains("policy \(policy.path)"), "\(status)")
            #expect(status.hasSuffix("last reload refused") == refused, "\(status)")
        }

        try policy.write(ats: PolicyFile.insecureHTTP(for: "app.test"))
        var before = monotonicMicroseconds()
        #expect(atsproxyctl("reload", "--socket", daemon.controlSocket).exitCode == 0)
        try expectReloadMessages(before: before, after: monotonicMicroseconds(), refused: false)

        try policy.write(raw: PolicyFile.truncated)
        before = monotonicMicroseconds()
        #expect(atsproxyctl("reload", "--socket", daemon.controlSocket).exitCode == 1)
        try expectReloadMessages(before: before, after: monotonicMicroseconds(), refused: true)

        // SIGHUP takes the same path; the stderr line marks its end.
        try policy.write(ats: "")
        before = monotonicMicroseconds()
        kill(daemon.pid, SIGHUP)
        #expect(daemon.standardErrorLine(containing: "atsproxy: reloaded (SIGHUP)") != nil, "\(daemon.standardError)")
        try expectReloadMessages(before: before, after: monotonicMicroseconds(), refused: false)

        #expect(notify.receive(timeout: 0.2) == nil, "nothing else is said between reloads")
        #expect(daemon.terminate() == 0)
    }
}
