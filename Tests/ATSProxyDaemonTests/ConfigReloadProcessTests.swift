import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// Reloading a real `atsproxy` started with `--config` and no policy flag, so that the file decides
/// every setting: `atsproxyctl reload` and SIGHUP re-read it. Each setting is shown by what clients
/// get (curl's status, a 408, a closed connection), not only by what `status` says.
///
/// Serialized: the timeout tests measure seconds, and the machine's two cores are shared.
@Suite("atsproxy reloads its config file", .serialized, .startsProcesses(timeLimit: .seconds(60)))
struct ConfigReloadProcessTests {
    /// A scratch directory holding a config file, the policies and hosts file it names and a
    /// plain-HTTP origin reachable as app.test and other.test; the daemon is started by the test,
    /// with `--config` alone.
    final class Lab {
        let factory: CertificateFactory
        let origin: TestHTTPOrigin
        let configPath: String
        private(set) var daemon: DaemonProcess!

        /// An exception allowing http:// to app.test: a policy under which app.test gets 200 and
        /// other.test 403.
        static let allowsApp = PolicyFile.insecureHTTP(for: "app.test")

        init(hosts: [String] = ["app.test", "other.test"]) throws {
            factory = try CertificateFactory()
            configPath = factory.path("atsproxy.conf")
            _ = try writeHostsFile(in: factory.directory, hosts)
            origin = try TestHTTPOrigin(directory: factory.directory)
        }

        /// Writes a policy (the NSAppTransportSecurity dictionary's contents) beside the config file.
        func writePolicy(_ name: String, ats inner: String) throws {
            try PolicyFile(directory: factory.directory, name: name).write(ats: inner)
        }

        /// Replaces the config file with `lines` (line n of the file is `lines[n - 1]`), written
        /// whole and renamed into place as an editor saves it.
        func writeConfig(_ lines: [String]) throws {
            try (lines.joined(separator: "\n") + "\n").write(toFile: configPath, atomically: true, encoding: .utf8)
        }

        /// Starts the daemon on the config file as written now.
        func start(namedByConfig files: (logFile: String, controlSocket: String)? = nil) throws {
            daemon = try DaemonProcess(directory: factory.directory, ["--config", configPath], namedByConfig: files)
        }

        func reload(json: Bool = false) -> ATSProxyCtl.Result {
            json
                ? atsproxyctl("reload", "--socket", daemon.controlSocket, "--json")
                : atsproxyctl("reload", "--socket", daemon.controlSocket)
        }

        /// A good reload's JSON answer; records an issue when it was refused.
        func reloadAnswer() -> [String: Any] {
            let result = reload(json: true)
            #expect(result.exitCode == 0, "reload refused: \(result.standardOutput) \(result.standardError)")
            return jsonObject(result.standardOutput) ?? [:]
        }

        /// curl's status for http://`host`:PORT/ on the origin, through the proxy.
        func curl(_ host: String) throws -> Int {
            let result = try curlStatus(proxyPort: daemon.port, "http://\(host):\(origin.port)/")
            if result.code == 0 { Issue.record("curl got no answer: \(result.error)") }
            return result.code
        }

        /// curl's status and the body it received (the proxy's own words for a 403).
        func curlWithBody(_ host: String) throws -> (code: Int, body: String) {
            let result = try runCommand(
                "/usr/bin/curl",
                [
                    "-sS", "--max-time", "30", "-w", "\n%{http_code}", "--proxy", "http://127.0.0.1:\(daemon.port)",
                    "http://\(host):\(origin.port)/",
                ])
            let text = result.standardOutput
            let cut = text.lastIndex(of: "\n") ?? text.startIndex
            return (Int(text[cut...].trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0, String(text[..<cut]))
        }

        /// The settings_applied or needs_restart list of a reload answer.
        static func keys(_ answer: [String: Any], _ field: String) -> [String]? { answer[field] as? [String] }
    }

    // MARK: - A broken file changes nothing

    enum Trigger: String, CaseIterable, CustomTestStringConvertible {
        case controlSocket = "atsproxyctl reload"
        case hangUp = "SIGHUP"
        var testDescription: String { rawValue }
    }

    @Test(
        "a broken config file (bad value, unknown key, missing policy) is refused, naming file, line and key, and the policy, mode, allow list and timeouts in force stay",
        arguments: Trigger.allCases)
    func brokenFileChangesNothing(trigger: Trigger) throws {
        let lab = try Lab()
        try lab.writePolicy("app.plist", ats: Lab.allowsApp)
        try lab.writePolicy("open.plist", ats: "<key>NSAllowsArbitraryLoads</key><true/>")
        let running = [
            "listen = 127.0.0.1:0", "threads = 2", "system-roots = off", "hosts-file = hosts",
            "policy = app.plist", "mode = enforce", "allow-client = 127.0.0.0/8", "head-timeout = 1",
        ]
        // Every live setting changed, each in a way its own check below would see: a policy that
        // allows everything, report mode, clients from 127.0.0.1 no longer allowed (those from
        // 127.0.0.2 still are, so the other checks run from there), a 30 s head timeout.
        let changed = [
            "listen = 127.0.0.1:0", "threads = 2", "system-roots = off", "hosts-file = hosts",
            "policy = open.plist", "mode = report", "allow-client = 127.0.0.2/32", "head-timeout = 30",
        ]
        try lab.writeConfig(running)
        try lab.start()
        let daemon = lab.daemon!

        /// The running settings, one behaviour each: 127.0.0.1 is served (the allow list);
        /// http://other.test is blocked (enforce mode) by the default rule (app.plist, which has an
        /// exception for app.test only); an unfinished head gets 408 after 1 s (the head timeout).
        var checks = 0
        func expectRunningSettings(_ context: String) throws {
            let local = try lab.curlWithBody("app.test")
            #expect(local.code == 200, "allow list changed \(context): \(local.body)")
            let other = try curlStatus(
                proxyPort: daemon.port, "http://other.test:\(lab.origin.port)/", ["--interface", "127.0.0.2"])
            #expect(other.code == 403, "mode or policy changed \(context): \(other.error)")
            // Its log line (written as the answer goes out, so waited for): one per check so far.
            var records: [[String: Any]] = []
            #expect(
                eventually {
                    records = daemon.logLines(atLeast: 0).filter { $0["host"] as? String == "other.test" }
                    return records.count == checks + 1
                }, "\(records)")
            checks += 1
            let record = records.last
            #expect(record?["action"] as? String == "blocked", "\(record ?? [:])")
            #expect(
                jsonValue(record, "rule", "kind") as? String == "default", "policy changed \(context): \(record ?? [:])"
            )
            let client = try #require(
                HalfHeadClient(port: daemon.port, host: "app.test", originPort: lab.origin.port, from: "127.0.0.2"))
            let answer = client.answer(within: 6)
            let seconds = client.secondsSinceHead
            #expect(
                answer?.hasPrefix("HTTP/1.1 408") == true, "head timeout changed \(context): \(answer ?? "no answer")")
            #expect(seconds > 0.8 && seconds < 3, "408 after \(seconds) s \(context), not the running 1 s")
            let status = daemonStatus(daemon.controlSocket)
            #expect(jsonValue(status, "mode") as? String == "enforce", "\(status ?? [:])")
            #expect(jsonValue(status, "policy", "path") as? String == lab.factory.path("app.plist"), "\(status ?? [:])")
        }
        try expectRunningSettings("before any reload")

        let brokenFiles: [(lines: [String], line: Int, key: String, reason: String)] = [
            (changed + ["verdict-ttl = soon"], 9, "verdict-ttl", "\"soon\" is not a whole number"),
            (changed + ["verdict-tll = 60"], 9, "verdict-tll", "unknown key; did you mean 'verdict-ttl'?"),
            (
                changed.map { $0.hasPrefix("policy") ? "policy = missing.plist" : $0 }, 5, "policy",
                lab.factory.path("missing.plist")
            ),
        ]
        for (index, broken) in brokenFiles.enumerated() {
            try lab.writeConfig(broken.lines)
            let place = "\(lab.configPath):\(broken.line): key '\(broken.key)': "
            switch trigger {
            case .controlSocket:
                let result = lab.reload()
                #expect(result.exitCode == 1, "\(result.standardOutput)")
                #expect(result.standardError.contains(place + broken.reason), "\(result.standardError)")
                #expect(
                    result.standardError.contains("The running policy and settings stay in force."),
                    "\(result.standardError)")
            case .hangUp:
                kill(daemon.pid, SIGHUP)
                let marker = "atsproxy: reload (SIGHUP) refused"
                #expect(eventually { daemon.standardErrorCount(of: marker) == index + 1 }, "\(daemon.standardError)")
                let line = daemon.standardErrorLine(containing: marker) ?? ""
                #expect(line.contains("the running policy stays: " + place + broken.reason), "\(line)")
            }
            let status = daemonStatus(daemon.controlSocket)
            #expect(jsonValue(status, "last_reload", "ok") as? Bool == false, "\(status ?? [:])")
            #expect((jsonValue(status, "last_reload", "error") as? String)?.contains(place) == true, "\(status ?? [:])")
            try expectRunningSettings("after refused reload \(index + 1) (\(broken.key))")
        }
        #expect(daemon.standardErrorCount(of: "atsproxy: reloaded") == 0, "\(daemon.standardError)")
        #expect(daemon.terminate() == 0)
    }

    // MARK: - Live settings, shown by behaviour

    @Test("a new policy path in the file, then the same policy file edited, apply to new connections")
    func policyTakesEffect() throws {
        let lab = try Lab()
        try lab.writePolicy("defaults.plist", ats: "")
        try lab.writePolicy("app.plist", ats: Lab.allowsApp)
        let lines = ["listen = 127.0.0.1:0", "threads = 2", "system-roots = off", "hosts-file = hosts"]
        try lab.writeConfig(lines + ["policy = defaults.plist"])
        try lab.start()
        #expect(try lab.curl("app.test") == 403, "the ATS defaults block http://")

        // Another file named in the config.
        try lab.writeConfig(lines + ["policy = app.plist"])
        let renamed = lab.reloadAnswer()
        #expect(Lab.keys(renamed, "settings_applied") == ["policy"], "\(renamed)")
        #expect(jsonValue(renamed, "policy", "path") as? String == lab.factory.path("app.plist"), "\(renamed)")
        #expect(try lab.curl("app.test") == 200, "the newly named policy allows http:// to app.test")

        // The same path, edited: no setting changed, the policy did.
        try lab.writePolicy("app.plist", ats: "")
        let edited = lab.reloadAnswer()
        #expect(Lab.keys(edited, "settings_applied") == [], "\(edited)")
        #expect(edited["policy_changed"] as? Bool == true, "\(edited)")
        #expect(try lab.curl("app.test") == 403, "the edited policy no longer allows http:// to app.test")
        #expect(lab.daemon.terminate() == 0)
    }

    @Test("mode = report lets a blocked request through after a reload, and mode = enforce blocks it again")
    func modeTakesEffect() throws {
        let lab = try Lab()
        let lines = ["listen = 127.0.0.1:0", "threads = 2", "system-roots = off", "hosts-file = hosts"]
        try lab.writeConfig(lines)
        try lab.start()
        #expect(try lab.curl("other.test") == 403, "the ATS defaults block http:// in enforce mode")

        try lab.writeConfig(lines + ["mode = report"])
        let report = lab.reloadAnswer()
        #expect(Lab.keys(report, "settings_applied") == ["mode"], "\(report)")
        #expect(try lab.curl("other.test") == 200, "report mode lets it through")
        #expect(daemonStatus(lab.daemon.controlSocket).flatMap { jsonValue($0, "mode") } as? String == "report")

        try lab.writeConfig(lines + ["mode = enforce"])
        let enforce = lab.reloadAnswer()
        #expect(Lab.keys(enforce, "settings_applied") == ["mode"], "\(enforce)")
        #expect(try lab.curl("other.test") == 403, "enforce mode blocks it again")

        let records = lab.daemon.logLines(atLeast: 3)
        #expect(records.map { $0["action"] as? String ?? "?" } == ["blocked", "allowed", "blocked"], "\(records)")
        #expect(
            records.map { $0["compliant"] as? Bool } == [false, false, false], "the verdict is the same in both modes")
        #expect(lab.daemon.terminate() == 0)
    }

    @Test("allow-client excluding 127.0.0.1 turns new clients away with 403 after a reload, and admits them again")
    func allowClientTakesEffect() throws {
        let lab = try Lab()
        try lab.writePolicy("app.plist", ats: Lab.allowsApp)
        let lines = [
            "listen = 127.0.0.1:0", "threads = 2", "system-roots = off", "hosts-file = hosts", "policy = app.plist",
        ]
        try lab.writeConfig(lines + ["allow-client = 127.0.0.0/8"])
        try lab.start()
        #expect(try lab.curl("app.test") == 200)

        try lab.writeConfig(lines + ["allow-client = 10.0.0.0/8", "allow-client = ::1/128"])
        let excluded = lab.reloadAnswer()
        #expect(Lab.keys(excluded, "settings_applied") == ["allow-client"], "\(excluded)")
        let refused = try lab.curlWithBody("app.test")
        #expect(refused.code == 403)
        #expect(refused.body.contains("client 127.0.0.1:"), "\(refused.body)")
        #expect(refused.body.contains("is not allowed to use this proxy"), "\(refused.body)")

        try lab.writeConfig(lines + ["allow-client = 127.0.0.0/8"])
        let admitted = lab.reloadAnswer()
        #expect(Lab.keys(admitted, "settings_applied") == ["allow-client"], "\(admitted)")
        let again = try lab.curlWithBody("app.test")
        #expect(again.code == 200, "\(again.body)")
        #expect(again.body.hasPrefix("hello from the origin"), "\(again.body)")
        #expect(lab.daemon.terminate() == 0)
    }

    @Test(
        "head-timeout and idle-timeout lowered to 1 s: new clients get 408 and are let go after 1 s, while connections opened before keep their 10 s and 300 s"
    )
    func timeoutsTakeEffectForNewConnectionsOnly() throws {
        let lab = try Lab()
        try lab.writePolicy("app.plist", ats: Lab.allowsApp)
        let lines = [
            "listen = 127.0.0.1:0", "threads = 2", "system-roots = off", "hosts-file = hosts", "policy = app.plist",
        ]
        try lab.writeConfig(lines)
        try lab.start()
        let daemon = lab.daemon!

        // Opened before the reload: a client that has sent half a head, and a keep-alive client
        // that has finished one request. Neither is let go within 2.5 s under the defaults.
        let halfHead = try #require(HalfHeadClient(port: daemon.port, host: "app.test", originPort: lab.origin.port))
        let keepAlive = try #require(KeepAliveClient(port: daemon.port))
        #expect(keepAlive.get(host: "app.test", originPort: lab.origin.port)?.hasPrefix("HTTP/1.1 200") == true)
        #expect(halfHead.answer(within: 2.5) == nil, "the default head timeout is 10 s")
        #expect(keepAlive.closed(within: 0) == false, "the default idle timeout is 300 s")

        try lab.writeConfig(lines + ["head-timeout = 1", "idle-timeout = 1"])
        let answer = lab.reloadAnswer()
        #expect(Lab.keys(answer, "settings_applied") == ["head-timeout", "idle-timeout"], "\(answer)")

        // New connections: 408 one second after the head began; let go one second after a response.
        let newHead = try #require(HalfHeadClient(port: daemon.port, host: "app.test", originPort: lab.origin.port))
        let timedOut = newHead.answer(within: 6)
        let headSeconds = newHead.secondsSinceHead
        #expect(timedOut?.hasPrefix("HTTP/1.1 408") == true, "\(timedOut ?? "no answer")")
        #expect(headSeconds > 0.8 && headSeconds < 3, "408 after \(headSeconds) s")
        let newKeepAlive = try #require(KeepAliveClient(port: daemon.port))
        #expect(newKeepAlive.get(host: "app.test", originPort: lab.origin.port)?.hasPrefix("HTTP/1.1 200") == true)
        let answered = Date()
        #expect(newKeepAlive.closed(within: 6), "the new 1 s idle timeout did not let the client go")
        let idleSeconds = Date().timeIntervalSince(answered)
        #expect(idleSeconds > 0.8 && idleSeconds < 3, "let go after \(idleSeconds) s")

        // The connections opened before keep theirs: the half head, begun over 3.5 s ago, is still
        // waited for and served when it ends (under 1 s it would get 408); the keep-alive client,
        // silent as long, is still there for its next request.
        #expect(halfHead.secondsSinceHead > 3.5)
        #expect(halfHead.answer(within: 0) == nil, "the connection opened before the reload lost its 10 s head timeout")
        let served = halfHead.finishHead(within: 6)
        #expect(served?.hasPrefix("HTTP/1.1 200") == true, "\(served ?? "no answer")")
        #expect(
            keepAlive.closed(within: 0) == false, "the connection opened before the reload lost its 300 s idle timeout")
        #expect(keepAlive.get(host: "app.test", originPort: lab.origin.port)?.hasPrefix("HTTP/1.1 200") == true)
        #expect(daemon.terminate() == 0)
    }

    @Test(
        "shutdown-timeout lowered to 1 s by a reload: SIGTERM with a tunnel open stops the daemon after 1 s, not the 30 s it started with"
    )
    func shutdownTimeoutTakesEffect() throws {
        let lab = try Lab()
        try lab.writePolicy("app.plist", ats: Lab.allowsApp)
        let lines = [
            "listen = 127.0.0.1:0", "threads = 2", "system-roots = off", "hosts-file = hosts", "policy = app.plist",
        ]
        try lab.writeConfig(lines)
        try lab.start()
        let daemon = lab.daemon!
        // A tunnel that stays open, so that the stop has something to wait for; one exchange
        // through it, so that it waits under the idle timeout and not for its first bytes.
        let tunnel = try #require(connectLoopback(port: daemon.port))
        defer { close(tunnel) }
        sendAll(tunnel, "CONNECT app.test:\(lab.origin.port) HTTP/1.1\r\nHost: app.test:\(lab.origin.port)\r\n\r\n")
        let head = receive(tunnel, until: "\r\n\r\n")
        #expect(head.hasPrefix("HTTP/1.1 200"), "\(head)")
        sendAll(tunnel, "GET /held HTTP/1.1\r\nHost: app.test\r\n\r\n")
        let response = receive(tunnel, until: "hello from the origin, /held\n")
        #expect(response.hasSuffix("hello from the origin, /held\n"), "\(response)")

        try lab.writeConfig(lines + ["shutdown-timeout = 1"])
        let answer = lab.reloadAnswer()
        #expect(Lab.keys(answer, "settings_applied") == ["shutdown-timeout"], "\(answer)")

        let signalled = Date()
        kill(daemon.pid, SIGTERM)
        #expect(waitForExit(daemon.process, timeout: 40), "still running 40 s after SIGTERM")
        let elapsed = Date().timeIntervalSince(signalled)
        #expect(elapsed > 0.9 && elapsed < 5, "stopped after \(elapsed) s")
        #expect(daemon.standardError.contains("1 open, given up to 1 s to finish"), "\(daemon.standardError)")
    }

    @Test(
        "os-profile and client-class change verdicts after a reload; cipher-profile and verdict-ttl are applied and reported"
    )
    func profilesAndClientClassTakeEffect() throws {
        let lab = try Lab()
        // Allows web content only: a urlsession client gets 403 for http://app.test, a webkit one 200.
        try lab.writePolicy("web.plist", ats: "<key>NSAllowsArbitraryLoadsInWebContent</key><true/>")
        let lines = [
            "listen = 127.0.0.1:0", "threads = 2", "system-roots = off", "hosts-file = hosts", "policy = web.plist",
        ]
        try lab.writeConfig(lines)
        try lab.start()
        // iOS 17 exempts local hosts (127.0.0.1) from ATS; iOS 9 does not.
        #expect(try lab.curl("127.0.0.1") == 200)
        #expect(try lab.curl("app.test") == 403)

        try lab.writeConfig(lines + ["os-profile = ios9"])
        let ios9 = lab.reloadAnswer()
        #expect(Lab.keys(ios9, "settings_applied") == ["os-profile"], "\(ios9)")
        #expect(jsonValue(ios9, "policy", "os_profile") as? String == "ios9", "\(ios9)")
        #expect(try lab.curl("127.0.0.1") == 403, "iOS 9 applies ATS to local hosts")

        try lab.writeConfig(lines + ["client-class = webkit"])
        let webkit = lab.reloadAnswer()
        #expect(Lab.keys(webkit, "settings_applied") == ["os-profile", "client-class"], "\(webkit)")
        #expect(try lab.curl("127.0.0.1") == 200, "back to iOS 17")
        #expect(try lab.curl("app.test") == 200, "NSAllowsArbitraryLoadsInWebContent applies to webkit clients")

        try lab.writeConfig(lines + ["client-class = webkit", "cipher-profile = documented", "verdict-ttl = 7"])
        let text = lab.reload()
        #expect(text.exitCode == 0, "\(text.standardError)")
        #expect(
            text.standardOutput.contains("  Settings applied: cipher-profile, verdict-ttl\n"), "\(text.standardOutput)")
        let status = daemonStatus(lab.daemon.controlSocket)
        #expect(jsonValue(status, "policy", "cipher_profile") as? String == "documented", "\(status ?? [:])")
        #expect(jsonValue(status, "verdict_cache", "ttl_s") as? Int == 7, "\(status ?? [:])")
        #expect(try lab.curl("app.test") == 200, "the client class stays webkit")
        #expect(lab.daemon.terminate() == 0)
    }

    @Test(
        "client-class given once applies to the running listener when the same reload changes listen; per-listener classes that cannot pair wait for the restart"
    )
    func clientClassWithChangedListen() throws {
        let lab = try Lab()
        try lab.writePolicy("web.plist", ats: "<key>NSAllowsArbitraryLoadsInWebContent</key><true/>")
        let lines = ["threads = 2", "system-roots = off", "hosts-file = hosts", "policy = web.plist"]
        try lab.writeConfig(lines + ["listen = 127.0.0.1:0"])
        try lab.start()
        #expect(try lab.curl("app.test") == 403, "a urlsession client")

        // A second listener alone (restart-only) is no change of class: it would take the shared one.
        let freePort = try #require(unusedLoopbackPort())
        try lab.writeConfig(lines + ["listen = 127.0.0.1:0", "listen = 127.0.0.1:\(freePort)"])
        let listenOnly = lab.reloadAnswer()
        #expect(Lab.keys(listenOnly, "settings_applied") == [], "\(listenOnly)")
        #expect(Lab.keys(listenOnly, "needs_restart") == ["listen"], "\(listenOnly)")

        // And one class for all: the running listener takes it.
        try lab.writeConfig(
            lines + ["listen = 127.0.0.1:0", "listen = 127.0.0.1:\(freePort)", "client-class = webkit"])
        let shared = lab.reloadAnswer()
        #expect(Lab.keys(shared, "settings_applied") == ["client-class"], "\(shared)")
        #expect(Lab.keys(shared, "needs_restart") == ["listen"], "\(shared)")
        #expect(try lab.curl("app.test") == 200, "the running listener's clients are webkit clients now")

        // One class per listener of the file, for two listeners where one runs: which class the
        // running one would get is the restart's to decide, so nothing of it is applied.
        try lab.writeConfig(
            lines + [
                "listen = 127.0.0.1:0", "listen = 127.0.0.1:\(freePort)", "client-class = urlsession",
                "client-class = media",
            ])
        let perListener = lab.reloadAnswer()
        #expect(Lab.keys(perListener, "settings_applied") == [], "\(perListener)")
        #expect(Lab.keys(perListener, "needs_restart") == ["listen", "client-class"], "\(perListener)")
        #expect(try lab.curl("app.test") == 200, "the running listener keeps its webkit class")
        #expect(lab.daemon.terminate() == 0)
    }

    // MARK: - Restart-only settings

    @Test(
        "restart-only settings changed in the file are reported as needing a restart and not applied: same port, threads, control socket, log and trust"
    )
    func restartOnlySettingsAreReportedNotApplied() throws {
        let lab = try Lab(hosts: ["app.test", "tls.test"])
        let factory = lab.factory
        try factory.rootCA("root")
        try factory.rootCA("other-root")
        try factory.certificate(
            "tls", issuer: "root", extensions: ["subjectAltName=DNS:tls.test", "extendedKeyUsage=serverAuth"])
        let server = try TestTLSServer(directory: factory.directory, ["-cert", "tls.pem", "-key", "tls.key"])
        try lab.writePolicy("app.plist", ats: Lab.allowsApp)
        let files = (logFile: factory.path("proxy.log"), controlSocket: factory.path("ctl.sock"))
        try lab.writeConfig([
            "listen = 127.0.0.1:0", "threads = 1", "control-socket = ctl.sock", "log-file = proxy.log",
            "hosts-file = hosts", "ca-file = root.pem", "system-roots = off", "policy = app.plist",
        ])
        try lab.start(namedByConfig: files)
        let daemon = lab.daemon!
        let port = daemon.port
        func curlTLS() throws -> Int {
            try curlStatus(proxyPort: port, "https://tls.test:\(server.port)/", ["--cacert", factory.path("root.pem")])
                .code
        }
        #expect(try lab.curl("app.test") == 200)
        #expect(try curlTLS() == 200)

        let freePort = try #require(unusedLoopbackPort())
        try lab.writeConfig([
            "listen = 127.0.0.1:\(freePort)", "threads = 2", "control-socket = other.sock", "log-file = other.log",
            "hosts-file = hosts", "ca-file = other-root.pem", "system-roots = on", "policy = app.plist",
        ])
        let restartOnly = ["listen", "ca-file", "system-roots", "log-file", "threads", "control-socket"]
        let text = lab.reload()
        #expect(text.exitCode == 0, "\(text.standardError)")
        #expect(
            text.standardOutput.contains(
                "  Changed but only applied at the next start: \(restartOnly.joined(separator: ", "))\n"),
            "\(text.standardOutput)")
        #expect(!text.standardOutput.contains("Settings applied"), "\(text.standardOutput)")
        let answer = lab.reloadAnswer()
        #expect(
            Lab.keys(answer, "needs_restart") == restartOnly,
            "the running values stay, so a second reload says it again: \(answer)")
        #expect(Lab.keys(answer, "settings_applied") == [], "\(answer)")
        kill(daemon.pid, SIGHUP)
        let hangUp = daemon.standardErrorLine(containing: "atsproxy: reloaded (SIGHUP)") ?? ""
        #expect(hangUp.contains("restart needed for \(restartOnly.joined(separator: ", "))"), "\(hangUp)")

        // Still on the same port, not on the new one.
        #expect(connectLoopback(port: freePort).map { close($0) } == nil, "the daemon listens on the new port")
        #expect(try lab.curl("app.test") == 200, "the old port serves")
        // Judged again, the TLS host is still trusted through the first CA file.
        #expect(atsproxyctl("flush-cache", "--socket", files.controlSocket).exitCode == 0)
        #expect(try curlTLS() == 200, "the CA file in force changed")
        // Logged to the first file; the new one never opened; no socket at the new path.
        let logged = daemon.logLines(atLeast: 4)
        #expect(logged.count == 4, "\(logged)")
        #expect(!FileManager.default.fileExists(atPath: factory.path("other.log")))
        #expect(!FileManager.default.fileExists(atPath: factory.path("other.sock")))

        let status = daemonStatus(files.controlSocket)
        #expect(jsonValue(status, "listeners") as? [String] == ["127.0.0.1:\(port)"], "\(status ?? [:])")
        #expect(jsonValue(status, "threads") as? Int == 1, "\(status ?? [:])")
        #expect((jsonValue(status, "loops") as? [Any])?.count == 1, "\(status ?? [:])")
        #expect(jsonValue(status, "control_socket") as? String == files.controlSocket, "\(status ?? [:])")
        #expect(jsonValue(status, "log_file") as? String == files.logFile, "\(status ?? [:])")
        #expect(daemon.terminate() == 0)
    }

    // MARK: - Cached verdicts

    @Test(
        "a reload drops only the cached verdict whose requirements changed: the other host's stays cached, the changed one is probed anew"
    )
    func reloadDropsOnlyChangedVerdicts() throws {
        let lab = try Lab(hosts: ["a.test", "b.test"])
        let factory = lab.factory
        try factory.rootCA("root")
        for name in ["a", "b"] {
            try factory.certificate(
                name, issuer: "root", extensions: ["subjectAltName=DNS:\(name).test", "extendedKeyUsage=serverAuth"])
        }
        // a.test offers RSA key exchange only, which ATS refuses unless forward secrecy is waived
        // for it; b.test is TLS 1.3, compliant under any of these policies.
        let serverA = try TestTLSServer(
            directory: factory.directory,
            ["-cert", "a.pem", "-key", "a.key", "-tls1_2", "-cipher", "AES128-GCM-SHA256"])
        let serverB = try TestTLSServer(directory: factory.directory, ["-cert", "b.pem", "-key", "b.key", "-tls1_3"])
        try lab.writePolicy("app.plist", ats: "")
        try lab.writeConfig([
            "listen = 127.0.0.1:0", "threads = 2", "system-roots = off", "ca-file = root.pem", "hosts-file = hosts",
            // A blocked host's 403 at the CONNECT, first connection or not: verdict mode.
            "policy = app.plist", "tunnel-start = verdict",
        ])
        try lab.start()
        let daemon = lab.daemon!
        /// The proxy's answer to curl's CONNECT: the origin's status once the tunnel is up, else the
        /// proxy's refusal (curl prints it, having no HTTP code of the origin's).
        func connect(_ host: String, _ port: UInt16) throws -> Int {
            let result = try curlStatus(
                proxyPort: daemon.port, "https://\(host):\(port)/", ["--cacert", factory.path("root.pem")])
            guard result.code == 0, let refusal = result.error.firstMatch(of: /CONNECT tunnel failed, response (\d+)/)
            else {
                return result.code
            }
            return Int(refusal.1) ?? 0
        }
        func cachedVerdicts() -> Int? {
            jsonValue(daemonStats(daemon.controlSocket), "verdict_cache", "entries") as? Int
        }

        #expect(try connect("a.test", serverA.port) == 403, "no forward secrecy: refused under the ATS defaults")
        #expect(try connect("b.test", serverB.port) == 200)
        #expect(cachedVerdicts() == 2)

        try lab.writePolicy(
            "app.plist",
            ats: "<key>NSExceptionDomains</key><dict><key>a.test</key><dict>"
                + "<key>NSExceptionRequiresForwardSecrecy</key><false/></dict></dict>")
        let answer = lab.reloadAnswer()
        #expect(answer["verdicts_dropped"] as? Int == 1, "\(answer)")
        #expect(cachedVerdicts() == 1, "only a.test's verdict goes")
        #expect(
            daemon.standardErrorLine(containing: "atsproxy: reloaded (control socket)")?.contains(
                "1 cached verdict dropped") == true,
            "\(daemon.standardError)")

        // b.test is answered from the cache: no new entry. Had its verdict been the one dropped, its
        // probe would have added one.
        #expect(try connect("b.test", serverB.port) == 200)
        #expect(cachedVerdicts() == 1, "b.test was probed again instead of using its cached verdict")
        // a.test is probed anew under its new requirements (offering the suites the exception allows)
        // and passes; its new verdict is cached beside b.test's.
        #expect(try connect("a.test", serverA.port) == 200, "a.test was not judged anew under its exception")
        #expect(cachedVerdicts() == 2)

        let records = daemon.logLines(atLeast: 4).filter { $0["method"] as? String == "CONNECT" }
        let rules = records.map { "\($0["host"] as? String ?? "?") \(jsonValue($0, "rule", "kind") as? String ?? "?")" }
        #expect(rules == ["a.test default", "b.test default", "b.test default", "a.test exception"], "\(records)")
        #expect(daemon.terminate() == 0)
    }
}

// MARK: - Raw clients

/// A client that connects to the proxy and sends the start of a request head, not its end.
final class HalfHeadClient {
    let descriptor: Int32
    /// When the head's first bytes went out: the head timeout counts from there.
    let headSentAt = Date()

    /// - Parameter source: the client's own address, any of 127.0.0.0/8 (for an allow list that
    ///   admits one loopback address and not another).
    init?(port: UInt16, host: String, originPort: UInt16, from source: String = "127.0.0.1") {
        guard let descriptor = connectLoopback(port: port, from: source) else { return nil }
        self.descriptor = descriptor
        sendAll(descriptor, "GET http://\(host):\(originPort)/ HTTP/1.1\r\nHost: \(host)\r\n")
    }

    deinit { close(descriptor) }

    var secondsSinceHead: Double { Date().timeIntervalSince(headSentAt) }

    /// What the proxy sent within `wait` seconds, as text; nil when it sent nothing and kept the
    /// connection open.
    func answer(within wait: Double) -> String? {
        receiveAvailable(descriptor, wait: wait).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Ends the head and returns the response's first bytes.
    func finishHead(within wait: Double) -> String? {
        sendAll(descriptor, "\r\n")
        return answer(within: wait)
    }
}

/// A keep-alive client: requests through the proxy, one at a time, on one connection.
final class KeepAliveClient {
    let descriptor: Int32

    init?(port: UInt16) {
        guard let descriptor = connectLoopback(port: port) else { return nil }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// Sends a GET and returns the whole response (the test origin's bodies end with a newline and
    /// are small), or nil when none came within 6 seconds.
    func get(host: String, originPort: UInt16) -> String? {
        sendAll(descriptor, "GET http://\(host):\(originPort)/ HTTP/1.1\r\nHost: \(host)\r\n\r\n")
        var response = ""
        let deadline = Date().addingTimeInterval(6)
        while Date() < deadline {
            guard let bytes = receiveAvailable(descriptor, wait: 0.2) else { continue }
            if bytes.isEmpty { break }
            response += String(decoding: bytes, as: UTF8.self)
            if let end = response.range(of: "\r\n\r\n"), response[end.upperBound...].hasSuffix("\n") { return response }
        }
        return nil
    }

    /// Whether the proxy closed the connection within `wait` seconds.
    func closed(within wait: Double) -> Bool {
        receiveAvailable(descriptor, wait: wait) == []
    }
}

/// A TCP connection from `source` to 127.0.0.1:`port`, or nil; the caller closes it.
private func connectLoopback(port: UInt16, from source: String) -> Int32? {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { return nil }
    func address(_ text: String, port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr(text)
        return address
    }
    var local = address(source, port: 0)
    var remote = address("127.0.0.1", port: port)
    let length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let connected = withUnsafePointer(to: &local) { localPointer in
        withUnsafePointer(to: &remote) { remotePointer in
            localPointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) } == 0
                && remotePointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, length) }
                    == 0
        }
    }
    guard connected else {
        close(descriptor)
        return nil
    }
    return descriptor
}

/// A loopback port nothing listens on now (bound, read and closed): for a listen address a
/// reload must not bind.
private func unusedLoopbackPort() -> UInt16? {
    guard let (descriptor, port) = bindLoopback(listening: nil) else { return nil }
    close(descriptor)
    return port
}
