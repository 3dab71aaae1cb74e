import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// Transparent mode (issue 30, item 1) in a network namespace each test makes and deletes: the
/// daemon, the test servers and the clients all run inside it; the rules `atsproxyctl capture rules
/// --local` prints redirect TCP to 10.77.0.0/24 into `--transparent-listen` in its output chain,
/// except the packets that carry the proxy's `--upstream-mark`, so the proxy's own connections to
/// the same servers are not redirected back to it (UDP 443 to them is refused). The clients use no proxy: they dial the servers, as an app that ignores the proxy
/// setting does. Nothing outside the namespace is touched. Needs root, ip and nft.
@Suite("transparent mode: connections a firewall redirected", .startsProcesses(timeLimit: .seconds(180)))
struct TransparentCaptureProcessTests {
    static let usable =
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/nft")
        && FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip")

    /// The transparent listener's port inside the namespace (a new namespace has every port free).
    static let capturePort: UInt16 = 15001
    static let mark = 0x4154

    /// A namespace with the servers' addresses and the redirect rules `atsproxyctl capture rules
    /// --local` prints for them; deleted when the value goes.
    final class Namespace {
        let name: String
        var wrapper: [String] { ["/usr/sbin/ip", "netns", "exec", name] }

        init() throws {
            name = "atsproxy-tp-\(getpid())-\(UUID().uuidString.prefix(6))"
            try Self.run(["/usr/sbin/ip", "netns", "add", name])
            try Self.run(
                wrapper + [
                    "/bin/sh", "-ec",
                    """
                    ip link set lo up
                    ip link add tp0 type veth peer name tp1
                    ip addr add 10.77.0.2/24 dev tp0
                    ip addr add 10.77.0.3/24 dev tp0
                    ip link set tp0 up; ip link set tp1 up
                    """,
                ])
        }

        /// Applies what `capture rules --local` prints for the servers' `ports` on 10.77.0.0/24,
        /// exempting `mark` (the daemon's, unless a test means to leave its connections unexempted).
        func redirect(ports: [UInt16], directory: String, mark: Int = TransparentCaptureProcessTests.mark) throws {
            let printed = ATSProxyCtl.run(
                ["capture", "rules", "--local", "--port", "\(TransparentCaptureProcessTests.capturePort)", "--mark"]
                    + ["\(mark)", "--destination", "10.77.0.0/24"]
                    + ports.flatMap { ["--tcp-port", "\($0)"] })
            guard printed.exitCode == 0 else { throw FixtureError(message: "capture rules: \(printed.standardError)") }
            let rules = directory + "/capture-\(name).nft"
            try printed.standardOutput.write(toFile: rules, atomically: true, encoding: .utf8)
            try Self.run(wrapper + ["/usr/sbin/nft", "-f", rules])
        }

        deinit { _ = try? Self.run(["/usr/sbin/ip", "netns", "del", name]) }

        static func run(_ command: [String]) throws {
            let result = try runCommand(command[0], Array(command.dropFirst()))
            guard result.status == 0 else {
                throw FixtureError(
                    message: "\(command.joined(separator: " ")): \(result.standardOutput)\(result.standardError)")
            }
        }
    }

    /// curl in the namespace, with no proxy: `host` resolves to `address` (curl's --resolve), as
    /// the device's own DNS answered.
    static func curl(
        _ namespace: Namespace, _ url: String, host: String, port: UInt16, address: String, trust: String,
        _ extra: [String] = []
    ) throws -> CommandResult {
        try runCommand(
            namespace.wrapper[0],
            Array(namespace.wrapper.dropFirst())
                + [
                    "/usr/bin/curl", "-sS", "--noproxy", "*", "--max-time", "30", "--cacert", trust, "--resolve",
                    "\(host):\(port):\(address)",
                ] + extra + [url])
    }

    static func daemon(_ fixture: InterceptFixture, _ namespace: Namespace, intercept: Bool, _ extra: [String] = [])
        throws -> DaemonProcess
    {
        let inspect = intercept ? ["--inspect", "intercept", "--ca-dir", fixture.caDir] : []
        return try DaemonProcess(
            directory: fixture.directory,
            [
                "--listen", "127.0.0.1:0", "--transparent-listen", "127.0.0.1:\(capturePort)", "--policy",
                fixture.policy.path, "--hosts-file", fixture.hostsFile, "--ca-file", fixture.factory.path("root.pem"),
                "--system-roots", "off", "--threads", "2", "--upstream-mark", "\(mark)",
                // The clients' connections come from the namespace's own address, as a LAN's devices would.
                "--allow-client", "10.77.0.0/24", "--allow-client", "127.0.0.0/8",
            ] + inspect + extra, wrapper: namespace.wrapper)
    }

    static func line(_ lines: [[String: Any]], host: String) -> [String: Any]? {
        lines.first { $0["host"] as? String == host }
    }

    @Test(
        "tunnel mode: TLS named by its SNI, cleartext by its Host, a nameless hello by its address; all judged as the proxy would, marked capture transparent",
        .enabled(if: usable))
    func tunnelMode() throws {
        let (legacy, good, plain, elsewhere) = ("legacy.tp.test", "good.tp.test", "plain.tp.test", "elsewhere.tp.test")
        let fixture = try InterceptFixture(names: [])
        // The proxy's own names (no DNS here): where the device dials them, but elsewhere.tp.test.
        try "10.77.0.2 \(legacy)\n10.77.0.3 \(good)\n10.77.0.9 \(elsewhere)\n".write(
            toFile: fixture.hostsFile, atomically: true, encoding: .utf8)
        try fixture.leaf("legacy", for: [legacy])
        try fixture.leaf("good", for: [good, elsewhere])
        let namespace = try Namespace()
        let legacyServer = try TestTLSServer(
            directory: fixture.directory,
            ["-cert", "legacy.pem", "-key", "legacy.key", "-tls1", "-cipher", "ECDHE-RSA-AES128-SHA:@SECLEVEL=0"],
            host: "10.77.0.2", wrapper: namespace.wrapper)
        let goodServer = try TestTLSServer(
            directory: fixture.directory, ["-cert", "good.pem", "-key", "good.key"], host: "10.77.0.3",
            wrapper: namespace.wrapper)
        let origin = try TestHTTPOrigin(directory: fixture.directory, host: "10.77.0.2", wrapper: namespace.wrapper)
        try namespace.redirect(ports: [legacyServer.port, goodServer.port, origin.port], directory: fixture.directory)
        let daemon = try Self.daemon(fixture, namespace, intercept: false)
        let root = fixture.factory.path("root.pem")

        // TLS 1.0 only: blocked under the ATS defaults, with the alert a TLS server sends.
        let blocked = try Self.curl(
            namespace, "https://\(legacy):\(legacyServer.port)/", host: legacy, port: legacyServer.port,
            address: "10.77.0.2", trust: root, ["--tlsv1.0", "--ciphers", "DEFAULT:@SECLEVEL=0"])
        #expect(blocked.status != 0)
        #expect(blocked.standardError.contains("alert") || blocked.standardError.contains("handshake"), "\(blocked)")
        // Compliant: relayed to the address dialled, through the mark's exemption (no loop).
        let allowed = try Self.curl(
            namespace, "https://\(good):\(goodServer.port)/", host: good, port: goodServer.port, address: "10.77.0.3",
            trust: root, ["-o", "/dev/null", "-w", "%{http_code}"])
        #expect(allowed.status == 0 && allowed.standardOutput == "200", "\(allowed)")
        // A name the proxy resolves elsewhere: flagged, not blocked.
        let mismatched = try Self.curl(
            namespace, "https://\(elsewhere):\(goodServer.port)/", host: elsewhere, port: goodServer.port,
            address: "10.77.0.3", trust: root, ["-o", "/dev/null", "-w", "%{http_code}"])
        #expect(mismatched.status == 0 && mismatched.standardOutput == "200", "\(mismatched)")
        // Cleartext: ATS's default forbids it; the device reads the proxy's 403 as the server's answer.
        let cleartext = try Self.curl(
            namespace, "http://\(plain):\(origin.port)/headers", host: plain, port: origin.port, address: "10.77.0.2",
            trust: root, ["-o", "/dev/null", "-w", "%{http_code}"])
        #expect(cleartext.standardOutput == "403", "\(cleartext)")
        // No SNI: judged as a load to the address, whose certificate does not name it.
        let nameless = try runCommand(
            namespace.wrapper[0],
            Array(namespace.wrapper.dropFirst())
                + ["/usr/bin/openssl", "s_client", "-connect", "10.77.0.3:\(goodServer.port)", "-noservername"],
            input: Data(), timeLimit: 30)
        #expect(nameless.status != 0 || !nameless.standardOutput.contains("Verify return code: 0"))
        // Dialled itself, not redirected: refused and said.
        _ = try runCommand(
            namespace.wrapper[0],
            Array(namespace.wrapper.dropFirst())
                + ["/usr/bin/curl", "-sS", "--max-time", "10", "http://127.0.0.1:\(Self.capturePort)/"])

        let lines = daemon.lines("connection", atLeast: 6)
        for line in lines where line["failure"] as? String != "not_redirected" {
            #expect(line["capture"] as? String == "transparent", "\(line)")
        }
        let legacyLine = try #require(Self.line(lines, host: legacy), "\(lines)")
        #expect(legacyLine["action"] as? String == "blocked")
        #expect(legacyLine["violations"] as? [String] == ["tls_version"], "\(legacyLine)")
        #expect(legacyLine["original_destination"] as? String == "10.77.0.2:\(legacyServer.port)")
        #expect(legacyLine["port"] as? Int == Int(legacyServer.port))
        let goodLine = try #require(Self.line(lines, host: good), "\(lines)")
        #expect(goodLine["action"] as? String == "allowed" && goodLine["compliant"] as? Bool == true, "\(goodLine)")
        #expect(goodLine["upstream"] as? String == "10.77.0.3:\(goodServer.port)")
        #expect(goodLine["server_name_mismatch"] is NSNull, "\(goodLine)")
        let elsewhereLine = try #require(Self.line(lines, host: elsewhere), "\(lines)")
        #expect(elsewhereLine["action"] as? String == "allowed", "\(elsewhereLine)")
        #expect(elsewhereLine["upstream"] as? String == "10.77.0.3:\(goodServer.port)", "the address dialled")
        let mismatch = try #require(elsewhereLine["server_name_mismatch"] as? String, "\(elsewhereLine)")
        #expect(mismatch.contains("10.77.0.9") && mismatch.contains("10.77.0.3"), "\(mismatch)")
        let plainLine = try #require(Self.line(lines, host: plain), "\(lines)")
        #expect(plainLine["method"] as? String == "GET" && plainLine["scheme"] as? String == "http", "\(plainLine)")
        #expect(plainLine["action"] as? String == "blocked")
        #expect(plainLine["port"] as? Int == Int(origin.port))
        let namelessLine = try #require(Self.line(lines, host: "10.77.0.3"), "\(lines)")
        #expect(namelessLine["action"] as? String == "blocked", "\(namelessLine)")
        let refused = try #require(lines.first { $0["failure"] as? String == "not_redirected" }, "\(lines)")
        #expect(refused["action"] as? String == "denied")

        // status and /metrics count the lines by capture path.
        let status = atsproxyctl("status", "--socket", daemon.controlSocket)
        #expect(status.standardOutput.contains("0 through the proxy setting, \(lines.count) transparent"), "\(status)")
        let web = try #require(daemon.webPort)
        let metrics = try runCommand(
            namespace.wrapper[0],
            Array(namespace.wrapper.dropFirst()) + ["/usr/bin/curl", "-sS", "http://127.0.0.1:\(web)/metrics"])
        #expect(
            metrics.standardOutput.contains(
                "atsproxy_connections_by_capture_total{capture=\"transparent\"} \(lines.count)"),
            "\(metrics.standardOutput)")
        #expect(daemon.terminate() == 0)
    }

    @Test(
        "a hotspot's rules, as capture rules prints them, apply, apply again in place, and go with one command",
        .enabled(if: usable))
    func routerRules() throws {
        let fixture = try InterceptFixture(names: [])
        let namespace = try Namespace()
        let printed = atsproxyctl("capture", "rules", "--interface", "tp1", "--tcp-port", "443", "--tcp-port", "8443")
        #expect(printed.exitCode == 0, "\(printed.standardError)")
        let rules = fixture.directory + "/router.nft"
        try printed.standardOutput.write(toFile: rules, atomically: true, encoding: .utf8)
        let nft = namespace.wrapper + ["/usr/sbin/nft"]
        for _ in 0..<2 { try Namespace.run(nft + ["-f", rules]) }
        let listed = try runCommand(nft[0], Array(nft.dropFirst()) + ["list", "table", "inet", "atsproxy"])
        #expect(
            listed.standardOutput.contains("iifname \"tp1\" tcp dport { 443, 8443 } redirect to :8443"), "\(listed)")
        #expect(listed.standardOutput.contains("iifname \"tp1\" udp dport 443 reject"), "\(listed)")
        try Namespace.run(nft + ["delete", "table", "inet", "atsproxy"])
        let gone = try runCommand(nft[0], Array(nft.dropFirst()) + ["list", "tables"])
        #expect(!gone.standardOutput.contains("atsproxy"), "\(gone)")
    }

    @Test(
        "rules that do not exempt the proxy's mark: its own connection comes back, is refused as a loop, and the device's fails",
        .enabled(if: usable))
    func redirectLoop() throws {
        let good = "good.tp.test"
        let fixture = try InterceptFixture(names: [])
        try "10.77.0.3 \(good)\n".write(toFile: fixture.hostsFile, atomically: true, encoding: .utf8)
        try fixture.leaf("good", for: [good])
        let namespace = try Namespace()
        let server = try TestTLSServer(
            directory: fixture.directory, ["-cert", "good.pem", "-key", "good.key"], host: "10.77.0.3",
            wrapper: namespace.wrapper)
        // The rules exempt mark 1; the daemon marks its connections with another.
        try namespace.redirect(ports: [server.port], directory: fixture.directory, mark: 1)
        let daemon = try Self.daemon(fixture, namespace, intercept: false)

        let looped = try Self.curl(
            namespace, "https://\(good):\(server.port)/", host: good, port: server.port, address: "10.77.0.3",
            trust: fixture.factory.path("root.pem"))
        #expect(looped.status != 0, "\(looped)")
        // The device's own line comes once the loop was cut; each of the proxy's connects that came
        // back is one refused line, not the start of another round.
        var lines: [[String: Any]] = []
        #expect(
            eventually {
                lines = daemon.logLines(atLeast: 0).filter { $0["kind"] as? String == "connection" }
                return lines.contains { $0["host"] as? String == good }
            }, "\(lines)")
        let loops = lines.filter { $0["failure"] as? String == "redirect_loop" }
        #expect(!loops.isEmpty && loops.count <= 3, "\(lines)")
        for line in loops {
            #expect(line["action"] as? String == "denied")
            #expect((line["upstream_error"] as? String)?.contains("--upstream-mark \(Self.mark)") == true, "\(line)")
        }
        let device = try #require(lines.first { $0["host"] as? String == good })
        #expect(device["action"] as? String != "allowed", "\(device)")
        #expect(daemon.terminate() == 0)
    }

    @Test("a device the allow list refuses gets a reset, not HTTP it would read as TLS", .enabled(if: usable))
    func refusedClient() throws {
        let fixture = try InterceptFixture(names: [])
        let namespace = try Namespace()
        try namespace.redirect(ports: [443], directory: fixture.directory)
        // The namespace's devices come from 10.77.0.0/24, which this daemon does not serve.
        let daemon = try DaemonProcess(
            directory: fixture.directory,
            [
                "--listen", "127.0.0.1:0", "--transparent-listen", "127.0.0.1:\(Self.capturePort)", "--policy",
                fixture.policy.path, "--upstream-mark", "\(Self.mark)",
            ], wrapper: namespace.wrapper)
        let refused = try Self.curl(
            namespace, "https://refused.tp.test/", host: "refused.tp.test", port: 443, address: "10.77.0.3",
            trust: fixture.factory.path("root.pem"))
        #expect(refused.status != 0)
        #expect(!refused.standardError.contains("wrong version number"), "HTTP bytes read as TLS: \(refused)")
        let line = try #require(daemon.lines("connection", atLeast: 1).first)
        #expect(line["failure"] as? String == "client_denied", "\(line)")
        #expect(line["capture"] as? String == "transparent", "\(line)")
        #expect(daemon.terminate() == 0)
    }

    @Test(
        "a ClientHello that trickles in a byte at a time is cut at the head timeout of its first byte",
        .enabled(if: usable))
    func tricklingHello() throws {
        let fixture = try InterceptFixture(names: [])
        let namespace = try Namespace()
        try namespace.redirect(ports: [443], directory: fixture.directory)
        let daemon = try Self.daemon(fixture, namespace, intercept: false, ["--head-timeout", "2"])
        // A record header promising 512 bytes, then one byte every 200 ms: 100 s to complete,
        // each byte well within the head timeout of the one before.
        let script = """
            import socket, time
            s = socket.create_connection(("10.77.0.3", 443))
            s.sendall(bytes([0x16, 0x03, 0x01, 0x02, 0x00]))
            sent = 0
            try:
                for _ in range(500):
                    time.sleep(0.2)
                    s.sendall(b"\\x01")
                    sent += 1
            except OSError:
                pass
            print(sent)
            """
        let trickled = try runCommand(
            namespace.wrapper[0], Array(namespace.wrapper.dropFirst()) + ["/usr/bin/python3", "-c", script],
            timeLimit: 120)
        let sent = try #require(Int(trickled.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(sent < 500, "the proxy kept reading a hello that never completes")
        let line = try #require(daemon.lines("connection", atLeast: 1).first)
        #expect(line["failure"] as? String == "hello_timeout", "\(line)")
        #expect(line["capture"] as? String == "transparent")
        #expect(daemon.terminate() == 0)
    }

    @Test("intercept mode: a captured TLS connection is intercepted, its requests logged", .enabled(if: usable))
    func interceptMode() throws {
        let good = "good.tp.test"
        let fixture = try InterceptFixture(names: [])
        try "10.77.0.3 \(good)\n".write(toFile: fixture.hostsFile, atomically: true, encoding: .utf8)
        try fixture.leaf("good", for: [good])
        let namespace = try Namespace()
        let origin = try TestHTTPOrigin(
            directory: fixture.directory, certificate: fixture.factory.path("good.pem"),
            key: fixture.factory.path("good.key"), host: "10.77.0.3", wrapper: namespace.wrapper)
        try namespace.redirect(ports: [origin.port], directory: fixture.directory)
        let daemon = try Self.daemon(fixture, namespace, intercept: true)

        let fetched = try Self.curl(
            namespace, "https://\(good):\(origin.port)/headers", host: good, port: origin.port, address: "10.77.0.3",
            trust: fixture.caPEM, ["-A", "MyApp/1.4.2 CFNetwork/1568.100.1 Darwin/24.0.0"])
        #expect(fetched.status == 0, "\(fetched)")
        #expect(fetched.standardOutput.hasPrefix("GET /headers HTTP/1.1"), "\(fetched.standardOutput)")

        let connection = try #require(daemon.lines("connection", atLeast: 1).first)
        #expect(connection["capture"] as? String == "transparent", "\(connection)")
        #expect(connection["inspect"] as? String == "intercept", "\(connection)")
        #expect(connection["original_destination"] as? String == "10.77.0.3:\(origin.port)")
        let request = try #require(daemon.lines("request", atLeast: 1).first)
        #expect(request["status"] as? Int == 200, "\(request)")
        #expect((request["app"] as? [String: Any])?["name"] as? String == "MyApp", "\(request)")
        #expect(daemon.terminate() == 0)
    }
}
