import ATSPolicy
import Foundation
import POSIX
import ProxyCore
import Synchronization
import TLSTestSupport
import Testing

/// Upstreams that misbehave the way real networks do, against the probes that judge CONNECTs: each
/// verdict has one deadline, a slow upstream holds nobody else up, and a broken one gets an answer
/// that says what it did.
@Suite("Hostile upstreams", .startsProcesses(timeLimit: .seconds(60)))
struct HostileUpstreamTests {
    /// The handshake deadline these tests run the proxy with.
    static let handshakeTimeout = Duration.seconds(2)

    static func startProxy(_ factory: CertificateFactory, handshakeTimeout: Duration = handshakeTimeout) throws
        -> TestProxy
    {
        // The probe's outcome read as the CONNECT's answer (504, 502, 403): the 200 waits for it.
        try TestProxy.start(factory, policyXML: fullATSForLocalhost) {
            $0.handshakeTimeout = handshakeTimeout
            $0.tunnelStart = .atVerdict
        }
    }

    /// Sends a CONNECT for `localhost:port` and waits up to `wait` seconds for the answer's head.
    static func connect(proxy: TestProxy, port: UInt16, wait: Double = 10) -> (head: String?, waited: Duration) {
        guard let client = connectLoopback(port: proxy.port) else { return (nil, .zero) }
        defer { close(client) }
        let sent = ContinuousClock.now
        sendAll(client, Array("CONNECT localhost:\(port) HTTP/1.1\r\nHost: localhost:\(port)\r\n\r\n".utf8))
        let answer = receiveHead(client, wait: wait)
        return (answer?.head, ContinuousClock.now - sent)
    }

    /// A server that accepts and never says a word (a firewalled host that still completes TCP);
    /// `accepted` runs as each connection is accepted.
    static func silentServer(accepted: @escaping @Sendable () -> Void = {}) throws -> RawTCPServer {
        try RawTCPServer { connection in
            accepted()
            _ = awaitPeerClose(connection, wait: 30)
        }
    }

    @Test("a server that accepts and never answers: the CONNECT gets 504 at the handshake deadline, in words")
    func silent() throws {
        let factory = try compliantChain()
        let server = try Self.silentServer()
        let proxy = try Self.startProxy(factory)
        defer { proxy.stop() }
        let (head, waited) = Self.connect(proxy: proxy, port: server.port)
        #expect(head?.hasPrefix("HTTP/1.1 504 Gateway Timeout") == true, "\(head ?? "no answer")")
        #expect(waited >= .milliseconds(1900) && waited < .seconds(4), "answered after \(waited)")
        let line = try #require(try proxy.waitForLogLines(1).first)
        #expect(line.action == "failed", "\(line)")
        #expect(line.upstreamError == "upstream sent no TLS handshake in 2 s", "\(line)")
        #expect(line.fields["upstream"] as? String == "127.0.0.1:\(server.port)", "\(line)")
    }

    @Test("a server that drips a byte every 200 ms is cut off at the deadline: progress does not extend it")
    func drip() throws {
        let factory = try compliantChain()
        // A TLS record header that never completes: 0x16 0x03 0x03, then a length, then a byte at a time.
        let server = try RawTCPServer { connection in
            var bytes: [UInt8] = [0x16, 0x03, 0x03, 0x40, 0x00] + [UInt8](repeating: 0x02, count: 200)
            while !bytes.isEmpty {
                guard sendAll(connection, [bytes.removeFirst()]) else { return }
                usleep(200_000)  // The scenario: an upstream that drips its handshake.
            }
        }
        let proxy = try Self.startProxy(factory)
        defer { proxy.stop() }
        let (head, waited) = Self.connect(proxy: proxy, port: server.port)
        #expect(head?.hasPrefix("HTTP/1.1 504") == true, "\(head ?? "no answer")")
        #expect(waited < .seconds(4), "answered after \(waited)")
        let line = try #require(try proxy.waitForLogLines(1).first)
        #expect(line.upstreamError?.hasPrefix("upstream did not complete the TLS handshake in 2 s") == true, "\(line)")
    }

    @Test("a server that resets the connection mid-handshake: 502 naming the reset, and no second, permissive probe")
    func resetMidHandshake() throws {
        let factory = try compliantChain()
        // Connections that sent a ClientHello: the probe's (the tunnel's own, opened alongside it,
        // is closed unused when no verdict comes).
        let hellos = Atomic<Int>(0)
        let server = try RawTCPServer { connection in
            guard receiveAvailable(connection, wait: 5)?.isEmpty == false else { return }
            hellos.add(1, ordering: .relaxed)
            // SO_LINGER 0: the close sends a reset, not a FIN.
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(connection, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        }
        let proxy = try Self.startProxy(factory)
        defer { proxy.stop() }
        let (head, _) = Self.connect(proxy: proxy, port: server.port)
        #expect(head?.hasPrefix("HTTP/1.1 502 Bad Gateway") == true, "\(head ?? "no answer")")
        let line = try #require(try proxy.waitForLogLines(1).first)
        #expect(line.upstreamError?.contains("Connection reset by peer") == true, "\(line)")
        #expect(
            hellos.load(ordering: .relaxed) == 1, "the upstream got \(hellos.load(ordering: .relaxed)) ClientHellos")
    }

    @Test("a server that answers the ClientHello with an alert is judged, with the permissive probe saying why")
    func refusedHandshake() throws {
        let factory = try compliantChain()
        // TLS 1.0 only: the ATS-shaped client (TLS 1.2 minimum) gets a protocol_version alert.
        let server = try TestTLSServer(
            directory: factory.directory,
            ["-cert", "leaf.pem", "-key", "leaf.key", "-tls1", "-cipher", "DEFAULT:@SECLEVEL=0"])
        let proxy = try Self.startProxy(factory)
        defer { proxy.stop() }
        let (head, _) = Self.connect(proxy: proxy, port: server.port)
        #expect(head?.hasPrefix("HTTP/1.1 403") == true, "\(head ?? "no answer")")
        let line = try #require(try proxy.waitForLogLines(1).first)
        #expect(line.action == "blocked", "\(line)")
        #expect(line.violations == ["tls_version"], "\(line)")
        #expect(line.tlsVersion == "TLSv1.0", "the permissive probe's facts: \(line)")
    }

    @Test("a server sending a certificate chain over 100 KiB is judged like any other")
    func largeChain() throws {
        let factory = try CertificateFactory()
        try factory.rootCA("root")
        // 5,200 names of 26 bytes: a leaf of about 120 KiB (DER), over OpenSSL's default 100 KiB limit.
        let names = (0..<5200).map { "DNS:host\(String(format: "%05d", $0)).example.com" }
        try factory.certificate(
            "leaf", issuer: "root",
            extensions: ["subjectAltName=DNS:localhost," + names.joined(separator: ","), "extendedKeyUsage=serverAuth"])
        let size = try Data(contentsOf: URL(fileURLWithPath: factory.path("leaf.pem"))).count
        #expect(size > 140_000, "the PEM leaf is \(size) bytes")
        let server = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let proxy = try Self.startProxy(factory)
        defer { proxy.stop() }
        let (head, _) = Self.connect(proxy: proxy, port: server.port)
        #expect(head?.hasPrefix("HTTP/1.1 200") == true, "\(head ?? "no answer")")
        let line = try #require(try proxy.waitForLogLines(1).first)
        #expect(line.compliant == true, "\(line)")
    }

    @Test("forty silent upstreams waiting out their deadline do not delay the verdict for a compliant host")
    func slowUpstreamsDelayNobody() throws {
        let factory = try compliantChain()
        // Which silent servers the proxy has reached: its probe is then waiting for their handshake.
        let reached = Locked<Set<Int>>([])
        let silent = try (0..<40).map { index in try Self.silentServer { reached.withLock { _ = $0.insert(index) } } }
        let good = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        // A deadline long enough that the silent CONNECTs are still waiting once all 40 have reached
        // their servers, however long a busy machine takes to get them there.
        let proxy = try Self.startProxy(factory, handshakeTimeout: .seconds(10))
        defer { proxy.stop() }
        let silentAnswered = Locked<[ContinuousClock.Instant]>([])
        let group = DispatchGroup()
        // A thread each, all at once: Dispatch's pool runs only a few blocking jobs at a time, and
        // the rest would wait their turn, not their verdict.
        for server in silent {
            group.enter()
            Thread.detachNewThread {
                let (head, _) = Self.connect(proxy: proxy, port: server.port, wait: 30)
                if head != nil { silentAnswered.withLock { $0.append(.now) } }
                group.leave()
            }
        }
        // Every silent CONNECT is waiting for its verdict: the proxy has connected to every silent server.
        #expect(
            eventually { reached.withLock { $0.count } == 40 },
            "the proxy reached \(reached.withLock { $0.count }) of 40")
        let (head, _) = Self.connect(proxy: proxy, port: good.port)
        let goodAnswered = ContinuousClock.now
        #expect(head?.hasPrefix("HTTP/1.1 200") == true, "\(head ?? "no answer")")
        group.wait()
        let answers = silentAnswered.withLock { $0 }
        #expect(answers.count == 40, "\(answers.count) of 40 silent CONNECTs got an answer")
        // Ordering, not timing: the compliant host was answered before any silent one timed out.
        #expect(answers.allSatisfy { $0 > goodAnswered }, "a silent CONNECT was answered before the compliant host")
    }
}
