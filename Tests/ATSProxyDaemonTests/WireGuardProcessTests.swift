import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// WireGuard for phones (issue 30, item 3) in two network namespaces each test makes and deletes:
/// a router, where the daemon runs its tunnel (`--wireguard-listen`, wireguard-go on a TUN) and the
/// test's servers listen; and a phone, joined to the router by a veth pair, whose WireGuard is
/// Debian's wireguard-go configured by `wg` from the `.conf` that `atsproxyctl wireguard
/// add-device` wrote (stripped by `wg-quick strip`, as the WireGuard app reads it). Every route of
/// the phone goes into the tunnel. Nothing outside the namespaces is touched; deleting them ends
/// both wireguard-go. Needs root, ip, nft, wg and wireguard-go.
@Suite("WireGuard for phones: a peer's traffic judged with its name", .startsProcesses(timeLimit: .seconds(300)))
struct WireGuardProcessTests {
    static let usable =
        getuid() == 0
        && ["/usr/sbin/nft", "/usr/sbin/ip", "/usr/bin/wg", "/usr/bin/wireguard-go", "/usr/bin/wg-quick"]
            .allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }

    static let port: UInt16 = 51820

    /// The router and the phone; deleted (with their interfaces and wireguard-go) when the value goes.
    final class Network {
        let router: String
        let phone: String
        /// Interface names are global to WireGuard's control sockets (/var/run/wireguard): unique per test.
        let serverInterface: String
        let phoneInterface: String

        init() throws {
            let tag = UUID().uuidString.prefix(6).lowercased()
            router = "atsproxy-wgr-\(getpid())-\(tag)"
            phone = "atsproxy-wgp-\(getpid())-\(tag)"
            serverInterface = "wgs\(tag)"
            phoneInterface = "wgp\(tag)"
            try Self.run(["/usr/sbin/ip", "netns", "add", router])
            // The router's resolver (``Resolver``): ip netns exec puts this file at /etc/resolv.conf.
            try FileManager.default.createDirectory(atPath: netnsDirectory, withIntermediateDirectories: true)
            try "nameserver 10.78.0.4\n".write(
                toFile: netnsDirectory + "/resolv.conf", atomically: true, encoding: .utf8)
            try Self.run(["/usr/sbin/ip", "netns", "add", phone])
            try Self.run(
                Self.inside(router) + [
                    "/bin/sh", "-ec",
                    """
                    ip link set lo up
                    ip link add sv0 type veth peer name sv1
                    ip addr add 10.78.0.2/24 dev sv0
                    ip addr add 10.78.0.3/24 dev sv0
                    ip addr add 10.78.0.4/24 dev sv0
                    ip link set sv0 up; ip link set sv1 up
                    ip link add rv0 type veth peer name pv0 netns \(phone)
                    ip addr add 10.99.0.1/24 dev rv0
                    ip link set rv0 up
                    """,
                ])
            try Self.run(
                Self.inside(phone) + [
                    "/bin/sh", "-ec", "ip link set lo up; ip addr add 10.99.0.2/24 dev pv0; ip link set pv0 up",
                ])
        }

        /// /etc/netns/ROUTER: what `ip netns exec` mounts over /etc in the router namespace.
        var netnsDirectory: String { "/etc/netns/" + router }

        var routerWrapper: [String] { Self.inside(router) }
        var phoneWrapper: [String] { Self.inside(phone) }

        /// The phone's wireguard-go, in the foreground (the test's child, killed when it goes).
        var phoneWireGuard: Process?

        /// The phone's WireGuard, from the device's .conf: wg-quick's own keys (Address, DNS) stripped
        /// and applied with ip, every route into the tunnel but the one to the router's endpoint.
        func joinPhone(conf: String, directory: String, address: String) throws {
            let stripped = try runCommand("/usr/bin/wg-quick", ["strip", conf])
            guard stripped.status == 0 else { throw FixtureError(message: "wg-quick strip: \(stripped)") }
            let file = directory + "/\(phoneInterface).wg"
            try stripped.standardOutput.write(toFile: file, atomically: true, encoding: .utf8)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
            process.arguments = ["netns", "exec", phone, "/usr/bin/wireguard-go", phoneInterface]
            process.environment = ProcessInfo.processInfo.environment.merging(["WG_PROCESS_FOREGROUND": "1"]) { $1 }
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            phoneWireGuard = process
            let socket = "/var/run/wireguard/\(phoneInterface).sock"
            guard eventually(timeout: 30, { FileManager.default.fileExists(atPath: socket) }) else {
                throw FixtureError(message: "the phone's wireguard-go made no \(socket)")
            }
            try Self.run(
                phoneWrapper + [
                    "/bin/sh", "-ec",
                    """
                    wg setconf \(phoneInterface) \(file)
                    ip addr add \(address)/32 dev \(phoneInterface)
                    ip link set \(phoneInterface) up
                    ip route add default dev \(phoneInterface)
                    """,
                ])
        }

        deinit {
            if let phoneWireGuard {
                kill(phoneWireGuard.processIdentifier, SIGKILL)
                phoneWireGuard.waitForExit()
            }
            _ = try? Self.run(["/usr/sbin/ip", "netns", "del", phone])
            _ = try? Self.run(["/usr/sbin/ip", "netns", "del", router])
            try? FileManager.default.removeItem(atPath: netnsDirectory)
        }

        static func inside(_ namespace: String) -> [String] { ["/usr/sbin/ip", "netns", "exec", namespace] }

        static func run(_ command: [String]) throws {
            let result = try runCommand(command[0], Array(command.dropFirst()))
            guard result.status == 0 else {
                throw FixtureError(
                    message: "\(command.joined(separator: " ")): \(result.standardOutput)\(result.standardError)")
            }
        }
    }

    static func inPhone(_ network: Network, _ command: [String], input: Data? = nil) throws -> CommandResult {
        try runCommand(network.phoneWrapper[0], Array(network.phoneWrapper.dropFirst()) + command, input: input)
    }

    /// curl on the phone, no proxy: `host` resolves to `address` as the device's DNS answered.
    static func curl(_ network: Network, host: String, address: String, trust: String, _ extra: [String] = [])
        throws -> CommandResult
    {
        try inPhone(
            network,
            [
                "/usr/bin/curl", "-sS", "--noproxy", "*", "--max-time", "20", "--cacert", trust, "--resolve",
                "\(host):443:\(address)", "-o", "/dev/null", "-w", "%{http_code}",
            ] + extra + ["https://\(host)/"])
    }

    /// One A query for `name` to `server` port 53, from the phone, over UDP or (`tcp`) over TCP,
    /// as a device retries a truncated answer: the answer's addresses.
    static func lookUp(_ network: Network, _ name: String, server: String, tcp: Bool = false) throws -> String {
        let script = """
            import socket, struct, sys
            name, server, tcp = sys.argv[1], sys.argv[2], sys.argv[3] == "tcp"
            query = struct.pack(">HHHHHH", 0x4154, 0x0100, 1, 0, 0, 0)
            query += b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\\0" + struct.pack(">HH", 1, 1)
            if tcp:
                s = socket.create_connection((server, 53), timeout=10)
                s.sendall(struct.pack(">H", len(query)) + query)
                def exactly(n):
                    data = b""
                    while len(data) < n:
                        more = s.recv(n - len(data))
                        assert more, "closed"
                        data += more
                    return data
                answer = exactly(struct.unpack(">H", exactly(2))[0])
            else:
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.settimeout(10)
                s.sendto(query, (server, 53))
                answer, _ = s.recvfrom(4096)
            assert answer[:2] == query[:2], "another id"
            count = struct.unpack(">H", answer[6:8])[0]
            print(",".join(".".join(map(str, answer[-16 * i - 4:len(answer) - 16 * i])) for i in range(count)))
            """
        let result = try inPhone(network, ["/usr/bin/python3", "-c", script, name, server, tcp ? "tcp" : "udp"])
        guard result.status == 0 else { throw FixtureError(message: "DNS query: \(result)") }
        return result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The router's own resolver at 10.78.0.4:53: over TCP every A query is answered 10.78.0.9, so a
    /// name the hosts file lacks shows that the proxy forwarded it; over UDP every answer comes
    /// truncated and empty (TC), as a large one does, so only a query forwarded over TCP gets it. A
    /// name with "silent" in it gets no answer over TCP: the connection is closed.
    static func resolver(_ network: Network, directory: String) throws -> TestScriptServer {
        let script = """
            import socket, struct, threading
            def answer(query, truncated=False):
                end = 12
                while query[end]:
                    end += query[end] + 1
                end += 5
                if truncated:
                    return query[:2] + struct.pack(">HHHHH", 0x8380, 1, 0, 0, 0) + query[12:end]
                head = query[:2] + struct.pack(">HHHHH", 0x8180, 1, 1, 0, 0)
                return head + query[12:end] + b"\\xc0\\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) + bytes([10, 78, 0, 9])
            def datagrams():
                u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("10.78.0.4", 53))
                while True:
                    query, peer = u.recvfrom(4096); u.sendto(answer(query, truncated=True), peer)
            def exactly(c, n):
                data = b""
                while len(data) < n:
                    more = c.recv(n - len(data))
                    if not more:
                        raise EOFError
                    data += more
                return data
            def stream(c):
                try:
                    while True:
                        query = exactly(c, struct.unpack(">H", exactly(c, 2))[0])
                        if b"silent" in query:
                            raise EOFError  # closes without an answer
                        reply = answer(query)
                        c.sendall(struct.pack(">H", len(reply)) + reply)
                except (EOFError, OSError):
                    c.close()
            t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            t.bind(("10.78.0.4", 53)); t.listen()
            threading.Thread(target=datagrams, daemon=True).start()
            print("PORT 53", flush=True)
            while True:
                c, _ = t.accept()
                threading.Thread(target=stream, args=(c,), daemon=True).start()
            """
        return try TestScriptServer(
            interpreter: network.routerWrapper[0],
            Array(network.routerWrapper.dropFirst()) + ["/usr/bin/python3", "-c", script],
            output: directory + "/resolver.log", name: "the router's resolver at 10.78.0.4:53")
    }

    @Test(
        "a peer added to a running tunnel: its DNS answered, its HTTPS judged and named device: NAME, QUIC refused; the tunnel restarts when wireguard-go dies and is gone when the daemon stops",
        .enabled(if: usable))
    func peerJudged() throws {
        let (legacy, good) = ("legacy.wg.test", "good.wg.test")
        let fixture = try InterceptFixture(names: [])
        try "10.78.0.2 \(legacy)\n10.78.0.3 \(good)\n".write(
            toFile: fixture.hostsFile, atomically: true, encoding: .utf8)
        try fixture.leaf("legacy", for: [legacy])
        try fixture.leaf("good", for: [good])
        let network = try Network()
        let legacyServer = try TestTLSServer(
            directory: fixture.directory,
            ["-cert", "legacy.pem", "-key", "legacy.key", "-tls1", "-cipher", "ECDHE-RSA-AES128-SHA:@SECLEVEL=0"],
            host: "10.78.0.2", port: 443, wrapper: network.routerWrapper)
        let goodServer = try TestTLSServer(
            directory: fixture.directory, ["-cert", "good.pem", "-key", "good.key"], host: "10.78.0.3", port: 443,
            wrapper: network.routerWrapper)
        let resolver = try Self.resolver(network, directory: fixture.directory)
        let state = fixture.directory + "/wireguard"
        let daemon = try DaemonProcess(
            directory: fixture.directory,
            [
                "--listen", "127.0.0.1:0", "--wireguard-listen", "0.0.0.0:\(Self.port)", "--wireguard-dir", state,
                "--wireguard-interface", network.serverInterface, "--policy", fixture.policy.path, "--hosts-file",
                fixture.hostsFile, "--ca-file", fixture.factory.path("root.pem"), "--system-roots", "off",
                "--threads", "2",
            ], wrapper: network.routerWrapper)
        let root = fixture.factory.path("root.pem")
        withExtendedLifetime((legacyServer, goodServer)) {}

        // Added while the daemon runs: the reload gives WireGuard the new peer.
        let added = atsproxyctl(
            "wireguard", "add-device", "phone1", "--dir", state, "--endpoint", "10.99.0.1:\(Self.port)",
            "--output-dir", fixture.directory, "--ca-dir", fixture.caDir, "--socket", daemon.controlSocket)
        #expect(added.exitCode == 0, "\(added.standardError)")
        #expect(added.standardOutput.contains("tunnel address 10.65.84.2"), "\(added.standardOutput)")
        #expect(added.standardOutput.contains("The running atsproxy reloaded"), "\(added.standardOutput)")
        #expect(added.standardOutput.contains("▀"), "a QR code")
        let profile = try PropertyListSerialization.propertyList(
            from: Data(contentsOf: URL(fileURLWithPath: fixture.directory + "/phone1.mobileconfig")), format: nil)
        let payloads = (profile as? [String: Any])?["PayloadContent"] as? [[String: Any]] ?? []
        #expect(payloads.map { $0["PayloadType"] as? String } == ["com.apple.security.root", "com.apple.vpn.managed"])
        try network.joinPhone(
            conf: fixture.directory + "/phone1.conf", directory: fixture.directory, address: "10.65.84.2")

        // The device's DNS: the proxy's, and any other server's, answered from the hosts file.
        #expect(try Self.lookUp(network, good, server: "10.65.84.1") == "10.78.0.3")
        #expect(try Self.lookUp(network, good, server: "192.0.2.53") == "10.78.0.3", "redirected to the proxy")
        // Over TCP too (a truncated answer's retry): answered, or forwarded over TCP to the router's
        // resolver (its resolv.conf, from /etc/netns), whose answer is relayed and recorded.
        #expect(try Self.lookUp(network, good, server: "10.65.84.1", tcp: true) == "10.78.0.3")
        #expect(try Self.lookUp(network, good, server: "192.0.2.53", tcp: true) == "10.78.0.3")
        #expect(try Self.lookUp(network, "far.wg.test", server: "10.65.84.1") == "", "truncated over UDP")
        #expect(try Self.lookUp(network, "far.wg.test", server: "10.65.84.1", tcp: true) == "10.78.0.9")
        // The host's resolver closes without answering: the device's connection is closed too, at
        // once, as a server's would be, not left open with nothing to come.
        let silent = #expect(throws: FixtureError.self) {
            try Self.lookUp(network, "silent.wg.test", server: "10.65.84.1", tcp: true)
        }
        #expect(silent?.message.contains("closed") == true, "\(silent?.message ?? "")")
        withExtendedLifetime(resolver) {}

        let allowed = try Self.curl(network, host: good, address: "10.78.0.3", trust: root)
        #expect(allowed.status == 0 && allowed.standardOutput == "200", "\(allowed)")
        let blocked = try Self.curl(
            network, host: legacy, address: "10.78.0.2", trust: root, ["--tlsv1.0", "--ciphers", "DEFAULT:@SECLEVEL=0"])
        #expect(blocked.status != 0, "\(blocked)")
        // An IP literal sends no SNI: judged as a load to the address, named by the DNS answer above.
        _ = try Self.inPhone(network, ["/usr/bin/curl", "-sS", "--max-time", "20", "-k", "https://10.78.0.3/"])

        // QUIC: refused at once, though a UDP server listens at that address and port.
        let echo = """
            import socket
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("10.78.0.3", 443))
            print("PORT 443", flush=True)
            while True:
                data, peer = s.recvfrom(2048); s.sendto(data, peer)
            """
        let quic = try TestScriptServer(
            interpreter: network.routerWrapper[0],
            Array(network.routerWrapper.dropFirst()) + ["/usr/bin/python3", "-c", echo],
            output: fixture.directory + "/udp-echo.log", name: "the UDP echo at 10.78.0.3:443")
        let refused = try Self.inPhone(
            network,
            [
                "/usr/bin/python3", "-c",
                """
                import socket
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(10)
                s.connect(("10.78.0.3", 443)); s.send(b"quic")
                try:
                    s.recv(100); print("answered")
                except ConnectionRefusedError:
                    print("refused")
                """,
            ])
        #expect(refused.standardOutput.contains("refused"), "\(refused)")
        withExtendedLifetime(quic) {}

        let lines = daemon.lines("connection", atLeast: 3)
        for line in lines {
            #expect(line["capture"] as? String == "wireguard", "\(line)")
            #expect(line["device"] as? String == "phone1", "\(line)")
            #expect((line["client"] as? String)?.hasPrefix("10.65.84.2:") == true, "\(line)")
        }
        let goodLine = try #require(lines.first { $0["host"] as? String == good }, "\(lines)")
        #expect(goodLine["action"] as? String == "allowed", "\(goodLine)")
        #expect(goodLine["original_destination"] as? String == "10.78.0.3:443")
        let legacyLine = try #require(lines.first { $0["host"] as? String == legacy }, "\(lines)")
        #expect(legacyLine["action"] as? String == "blocked")
        #expect(legacyLine["violations"] as? [String] == ["tls_version"], "\(legacyLine)")
        let literal = try #require(lines.first { $0["host"] as? String == "10.78.0.3" }, "\(lines)")
        #expect(literal["dns_name"] as? String == good, "\(literal)")

        // report --device: the device's lines, and none of another's.
        let report = atsproxyctl("report", daemon.logPath, "--device", "phone1", "--format", "json")
        #expect(report.exitCode == 0 && report.standardOutput.contains(good), "\(report.standardOutput)")
        let none = atsproxyctl("report", daemon.logPath, "--device", "phone2", "--format", "json")
        #expect(!none.standardOutput.contains(good), "\(none.standardOutput)")
        let status = atsproxyctl("status", "--socket", daemon.controlSocket)
        #expect(status.standardOutput.contains("through WireGuard"), "\(status.standardOutput)")

        // The onboarding page offers the tunnel, at the endpoint the daemon recorded for add-device.
        let page = try runCommand(
            network.routerWrapper[0],
            Array(network.routerWrapper.dropFirst()) + ["/usr/bin/curl", "-sS", "http://127.0.0.1:\(daemon.port)/"])
        let recorded = try String(contentsOfFile: state + "/endpoint", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(recorded.hasSuffix(":\(Self.port)") && !recorded.hasPrefix("0.0.0.0"), "\(recorded)")
        #expect(page.standardOutput.contains("through WireGuard</h2>"), "\(page)")
        #expect(page.standardOutput.contains("<code>\(recorded)</code>"), "\(page)")

        // wireguard-go killed: the daemon starts it again, configured, and the phone gets through.
        let before = try #require(Self.wireguardGoPID(daemon), "\(daemon.standardError)")
        kill(before, SIGKILL)
        #expect(
            eventually(timeout: 60) { (Self.wireguardGoPID(daemon)).map { $0 != before } ?? false },
            "\(daemon.standardError)")
        #expect(daemon.standardError.contains("wireguard-go (\(network.serverInterface)) running again"))
        #expect(
            try eventually(timeout: 120, interval: 1) {
                try Self.curl(network, host: good, address: "10.78.0.3", trust: root, ["--max-time", "5"])
                    .standardOutput == "200"
            })

        // Removed: its key no longer opens the tunnel.
        let removed = atsproxyctl(
            "wireguard", "remove-device", "phone1", "--dir", state, "--socket", daemon.controlSocket)
        #expect(removed.exitCode == 0, "\(removed.standardError)")
        let peers = try runCommand(
            network.routerWrapper[0],
            Array(network.routerWrapper.dropFirst()) + ["/usr/bin/wg", "show", network.serverInterface, "peers"])
        #expect(peers.status == 0 && peers.standardOutput.isEmpty, "\(peers)")

        // Stopped: the interface and the rules are gone.
        #expect(daemon.terminate() == 0)
        let link = try runCommand(
            network.routerWrapper[0],
            Array(network.routerWrapper.dropFirst()) + ["/usr/sbin/ip", "link", "show", network.serverInterface])
        #expect(link.status != 0, "\(link)")
        let table = try runCommand(
            network.routerWrapper[0],
            Array(network.routerWrapper.dropFirst()) + ["/usr/sbin/nft", "list", "table", "inet", "atsproxy_wireguard"])
        #expect(table.status != 0, "\(table)")
    }

    /// wireguard-go's pid as `status` gives it; nil while it is being started again.
    static func wireguardGoPID(_ daemon: DaemonProcess) -> Int32? {
        let answer = atsproxyctl("status", "--socket", daemon.controlSocket, "--json")
        guard let data = answer.standardOutput.data(using: .utf8),
            let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let wireguard = json["wireguard"] as? [String: Any], wireguard["engine"] as? String == "wireguard-go"
        else { return nil }
        return (wireguard["wireguard_go_pid"] as? Int).map(Int32.init)
    }
}
