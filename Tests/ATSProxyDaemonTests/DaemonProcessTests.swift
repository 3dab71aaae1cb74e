import Foundation
import TLSTestSupport
import Testing

/// The `atsproxy` executable as a user runs it: flags, hosts file, listeners, signals, limits.
@Suite("atsproxy as a process", .startsProcesses(timeLimit: .seconds(60)))
struct DaemonProcessTests {
    /// A root and a leaf for `app.atsproxy.test`, a name only the hosts file knows.
    static func appChain() throws -> CertificateFactory {
        let factory = try CertificateFactory()
        try factory.rootCA("root")
        try factory.certificate(
            "leaf", issuer: "root", extensions: ["subjectAltName=DNS:app.atsproxy.test", "extendedKeyUsage=serverAuth"])
        try "# test names\n127.0.0.1   app.atsproxy.test   # the test server\n"
            .write(toFile: factory.path("hosts"), atomically: true, encoding: .utf8)
        return factory
    }

    static func writePolicy(_ factory: CertificateFactory, _ inner: String) throws -> String {
        let path = factory.path("Info-\(UUID().uuidString).plist")
        try "<plist version=\"1.0\"><dict><key>NSAppTransportSecurity</key><dict>\(inner)</dict></dict></plist>"
            .write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func common(_ factory: CertificateFactory) -> [String] {
        [
            "--ca-file", factory.path("root.pem"), "--system-roots", "off", "--hosts-file", factory.path("hosts"),
            "--threads", "2",
        ]
    }

    @Test("--hosts-file names resolve for both the probe and the tunnel, and the connection is judged")
    func hostsFile() throws {
        let factory = try Self.appChain()
        let server = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let daemon = try DaemonProcess(
            directory: factory.directory,
            ["--listen", "127.0.0.1:0", "--policy", try Self.writePolicy(factory, "")] + Self.common(factory))
        // curl does not resolve the name: the proxy does, from the hosts file.
        let result = try runCommand(
            "/usr/bin/curl",
            [
                "-sS", "--max-time", "20", "--proxy", "http://127.0.0.1:\(daemon.port)", "--cacert",
                factory.path("root.pem"),
                "https://app.atsproxy.test:\(server.port)/",
            ])
        let lines = daemon.logLines(atLeast: 1)
        #expect(daemon.terminate() == 0)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.contains("s_server"))
        #expect(lines.first?["host"] as? String == "app.atsproxy.test")
        #expect(lines.first?["action"] as? String == "allowed")
        #expect((lines.first?["rule"] as? [String: Any])?["kind"] as? String == "default")
    }

    @Test("a hosts file with a bad line stops the start, naming the file and line")
    func badHostsFile() throws {
        let factory = try CertificateFactory()
        try "127.0.0.1 fine.test\n127.0.0.300 broken.test\n".write(
            toFile: factory.path("hosts"), atomically: true, encoding: .utf8)
        let result = try runCommand(
            DaemonProcess.executable,
            [
                "--listen", "127.0.0.1:0", "--hosts-file", factory.path("hosts"), "--system-roots", "off",
            ])
        #expect(result.status != 0)
        #expect(result.standardError.contains("hosts:2"), "\(result.standardError)")
        #expect(result.standardError.contains("127.0.0.300"), "\(result.standardError)")
    }

    @Test("each listener judges as its own client class: web content may load what URLSession may not")
    func clientClassPerListener() throws {
        let factory = try Self.appChain()
        let server = try TestTLSServer(
            directory: factory.directory,
            ["-cert", "leaf.pem", "-key", "leaf.key", "-tls1", "-cipher", "ECDHE-RSA-AES128-SHA:@SECLEVEL=0"])
        let policy = try Self.writePolicy(factory, "<key>NSAllowsArbitraryLoadsInWebContent</key><true/>")
        let daemon = try DaemonProcess(
            directory: factory.directory,
            [
                "--listen", "127.0.0.1:0", "--listen", "127.0.0.1:0", "--client-class", "urlsession", "--client-class",
                "webkit",
                "--policy", policy,
                // The two listeners' answers at the CONNECT (403, 200): verdict mode.
                "--tunnel-start", "verdict",
            ] + Self.common(factory))
        #expect(daemon.ports.count == 2)
        let connect = Array("CONNECT app.atsproxy.test:\(server.port) HTTP/1.1\r\n\r\n".utf8)
        let urlSession = String(decoding: exchangeRaw(port: daemon.ports[0], connect), as: UTF8.self)
        let webContent = String(decoding: exchangeRaw(port: daemon.ports[1], connect), as: UTF8.self)
        _ = daemon.terminate()
        #expect(urlSession.hasPrefix("HTTP/1.1 403"), "\(urlSession)")
        #expect(urlSession.contains("\r\nX-ATS-Violations: tls_version\r\n"), "\(urlSession)")
        #expect(webContent.hasPrefix("HTTP/1.1 200"), "\(webContent)")
    }

    @Test("--client-class given twice for three listeners is refused")
    func clientClassCount() throws {
        let result = try runCommand(
            DaemonProcess.executable,
            [
                "--listen", "127.0.0.1:0", "--listen", "127.0.0.1:0", "--listen", "127.0.0.1:0",
                "--client-class", "webkit", "--client-class", "media",
            ])
        #expect(result.status != 0)
        #expect(
            result.standardError.contains("--client-class: given 2 times for 3 --listen addresses"),
            "\(result.standardError)")
    }

    @Test("out of file descriptors, the daemon pauses accepting instead of spinning, then serves again")
    func descriptorExhaustion() throws {
        let factory = try Self.appChain()
        let limit = 40
        let daemon = try DaemonProcess(
            directory: factory.directory, ["--listen", "127.0.0.1:0", "--threads", "1", "--system-roots", "off"],
            wrapper: ["/usr/bin/prlimit", "--nofile=\(limit):\(limit)", "--"])
        // The limit is the daemon's own (prlimit execs it).
        let limits =
            (try? String(contentsOfFile: "/proc/\(daemon.process.processIdentifier)/limits", encoding: .utf8)) ?? ""
        let openFiles = limits.split(separator: "\n").first { $0.hasPrefix("Max open files") }?.split(separator: " ")
        try #require(
            openFiles?.count ?? 0 > 4 && openFiles?[3] == "\(limit)" && openFiles?[4] == "\(limit)", "\(limits)")
        let request = Array("GET http://blocked.test/ HTTP/1.1\r\nHost: blocked.test\r\n\r\n".utf8)
        // More connections than the daemon has descriptors left: the kernel completes them all, the
        // daemon accepts until it is out and the rest wait in the listen backlog.
        var held: [Int32] = []
        defer { for descriptor in held { close(descriptor) } }
        for _ in 0..<60 {
            if let descriptor = connectLoopback(port: daemon.port) { held.append(descriptor) }
        }
        #expect(held.count == 60)
        // The precondition: every descriptor number the limit allows is taken... (Counted by number:
        // the daemon may also hold one above the limit, inherited from the test process when
        // another test's socket appeared while Process prepared the spawn.)
        var taken: [Int] = []
        let full = eventually(timeout: 10) {
            taken = daemon.openDescriptorNumbers.filter { $0 < limit }
            return taken.count == limit
        }
        try #require(
            full, "the daemon holds \(taken.count) of the \(limit) descriptor numbers it may have: it never ran out")
        // ...and a client now gets no answer: it waits in the backlog, unaccepted.
        let waiting = try #require(connectLoopback(port: daemon.port))
        defer { close(waiting) }
        _ = request.withUnsafeBytes { send(waiting, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        let early = receiveAvailable(waiting, wait: 0.5).map { String(decoding: $0, as: UTF8.self) }
        #expect(early == nil, "answered while out of descriptors: \(early ?? "")")

        // Nothing happening is the point: the CPU the daemon uses over 1.5 s of waiting, which stays
        // a sleep (a busy machine only gives a spinning daemon less of the core, and a quiet one none).
        let before = daemon.cpuSeconds
        Thread.sleep(forTimeInterval: 1.5)
        let spent = daemon.cpuSeconds - before
        // Spinning on accept() would burn the whole 1.5 s of a core.
        #expect(spent < 0.5, "the daemon used \(spent) s of CPU while out of descriptors")
        // Said on stderr once for the burst, not once per pause.
        let said = daemon.standardError.components(separatedBy: "cannot accept clients (Too many open files)").count - 1
        #expect(said == 1, "\(daemon.standardError)")

        for descriptor in held { close(descriptor) }
        held = []
        // Descriptors free again: the client that waited is accepted and answered, and so is a new one.
        let late = String(decoding: receiveAvailable(waiting, wait: 10) ?? [], as: UTF8.self)
        #expect(late.hasPrefix("HTTP/1.1 403"), "the waiting client got: \(late)")
        let answer = String(decoding: exchangeRaw(port: daemon.port, request), as: UTF8.self)
        #expect(answer.hasPrefix("HTTP/1.1 403"), "\(answer)")
        #expect(daemon.terminate() == 0)
    }

    @Test("SIGTERM stops the daemon with status 0")
    func terminates() throws {
        let factory = try CertificateFactory()
        let daemon = try DaemonProcess(
            directory: factory.directory, ["--listen", "127.0.0.1:0", "--system-roots", "off"])
        #expect(daemon.terminate() == 0)
        #expect(daemon.standardError.contains("atsproxy stopping"))
    }

    @Test("after every kind of connection has come and gone, the daemon holds no more descriptors than before")
    func noDescriptorLeaks() throws {
        let factory = try Self.appChain()
        let compliant = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let weak = try TestTLSServer(
            directory: factory.directory,
            ["-cert", "leaf.pem", "-key", "leaf.key", "-tls1", "-cipher", "ECDHE-RSA-AES128-SHA:@SECLEVEL=0"])
        let origin = try TestHTTPOrigin(directory: factory.directory)
        let policy = try Self.writePolicy(
            factory,
            """
            <key>NSExceptionDomains</key><dict><key>localhost</key><dict>\
            <key>NSExceptionAllowsInsecureHTTPLoads</key><true/></dict></dict>
            """)
        let daemon = try DaemonProcess(
            // Each kind's answer at the CONNECT (a blocked one's 403 among them): verdict mode.
            directory: factory.directory,
            ["--listen", "127.0.0.1:0", "--policy", policy, "--tunnel-start", "verdict"] + Self.common(factory))
        let proxy = "http://127.0.0.1:\(daemon.port)"
        // One line per URL curl fetched: its number, curl's result, the CONNECT's status and the
        // final one (000 for none), and the body's size. Bodies go to /dev/null.
        func curl(_ urls: [String]) throws -> [String] {
            let result = try runCommand(
                "/usr/bin/curl",
                [
                    "-sS", "--max-time", "10", "--proxy", proxy, "--cacert", factory.path("root.pem"),
                    "-w", "%{urlnum} %{exitcode} %{http_connect} %{http_code} %{size_download}\\n",
                ] + urls.flatMap { ["-o", "/dev/null", $0] })
            return result.standardOutput.split(separator: "\n").map(String.init)
        }
        // What the log must hold, one summary per line: ports by name, violations, the origin's
        // status, the tunnel's protocol.
        let names = [compliant.port: "compliant", weak.port: "weak", origin.port: "origin"]
        func summary(_ line: [String: Any]) -> String {
            let port = line["port"] as? Int ?? -1
            let violations = (line["violations"] as? [String])?.joined(separator: ",") ?? "?"
            return "\(line["method"] as? String ?? "?") \(line["host"] as? String ?? "?"):"
                + "\(names[UInt16(clamping: port)] ?? String(port)) \(line["action"] as? String ?? "?") [\(violations)] "
                + "\(line["status"] as? Int ?? 0) \(line["tunnel"] as? String ?? "-")"
        }
        var expected = [
            "GET localhost:origin allowed [] 200 -", "CONNECT app.atsproxy.test:compliant allowed [] 0 tls",
        ]

        // Warm up once, then count: the first probe starts libdispatch's own epoll, eventfd and timerfd.
        let warm = try curl(["http://localhost:\(origin.port)/warm", "https://app.atsproxy.test:\(compliant.port)/"])
        #expect(
            warm.map { $0.split(separator: " ").prefix(4).joined(separator: " ") } == ["0 0 000 200", "1 0 200 200"])
        #expect(daemon.logLines(atLeast: 2).count == 2)
        // Counted once the warm-up's connections have ended (`stats` answers only after its own
        // connection is closed on the daemon's side, as atsproxyctl reads to the end).
        #expect(daemon.awaitNoOpenConnections(), "the warm-up's connections never ended")
        let before = daemon.openDescriptors
        for round in 0..<5 {
            let fetched = try curl([
                "https://app.atsproxy.test:\(compliant.port)/", "https://app.atsproxy.test:\(weak.port)/",
                "https://app.atsproxy.test:1/", "http://localhost:\(origin.port)/big?bytes=300000",
                "http://localhost:\(origin.port)/close", "http://blocked.test/",
            ]).map { $0.split(separator: " ").map(String.init) }
            // curl's result, the CONNECT's status (56 and 403 or 502: the tunnel was refused), the final status.
            #expect(
                fetched.map { $0.prefix(4).joined(separator: " ") } == [
                    "0 0 200 200", "1 56 403 000", "2 56 502 000", "3 0 000 200", "4 0 000 200", "5 0 000 403",
                ], "round \(round)")
            let sizes = fetched.map { Int($0.last ?? "") ?? -1 }
            #expect(
                sizes.count == 6 && sizes[0] > 0 && sizes[1...4] == [0, 0, 300_000, 24] && sizes[5] > 0, "\(sizes)")
            let garbage = String(
                decoding: exchangeRaw(port: daemon.port, Array("garbage \(round)\r\n\r\n".utf8)), as: UTF8.self)
            #expect(garbage.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), "\(garbage)")
            // Cleartext through a tunnel to the origin, which the exception allows.
            let tunnel = String(
                decoding: exchangeRaw(
                    port: daemon.port,
                    Array("CONNECT localhost:\(origin.port) HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n".utf8)),
                as: UTF8.self)
            #expect(tunnel.hasPrefix("HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200 OK\r\n"), "\(tunnel)")
            #expect(tunnel.hasSuffix("\r\n\r\nhello from the origin, /\n"), "\(tunnel)")
            // A client that connects and leaves at once: no request, no line.
            if let half = connectLoopback(port: daemon.port) { close(half) }
            expected += [
                "CONNECT app.atsproxy.test:compliant allowed [] 0 tls",
                "CONNECT app.atsproxy.test:weak blocked [tls_version] 0 -",
                "CONNECT app.atsproxy.test:1 failed [] 0 -", "GET localhost:origin allowed [] 200 -",
                "GET localhost:origin allowed [] 200 -", "GET blocked.test:80 blocked [cleartext] 0 -",
                "- -:0 failed [] 0 -",
                "CONNECT localhost:origin allowed [] 0 cleartext",
            ]
        }
        _ = daemon.logLines(atLeast: expected.count)
        // Sessions close their descriptors as they end, which can be a moment after their log line.
        var after = 0
        _ = eventually(timeout: 5) {
            after = daemon.openDescriptors
            return after <= before
        }
        // Read once everything has ended, so a line too many shows.
        let lines = daemon.logLines(atLeast: expected.count)
        #expect(daemon.terminate() == 0)
        // Sessions may end in another order than they began: the lines are compared as a multiset.
        #expect(lines.map(summary).sorted() == expected.sorted())
        #expect(before > 0)
        #expect(after <= before, "descriptors before: \(before), after: \(after)")
    }
}
