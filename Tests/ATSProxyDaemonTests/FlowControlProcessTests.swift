import Foundation
import POSIX
import TLSTestSupport
import Testing

/// Flow control in the real daemon: a reader that stops reading, on either side, of a tunnel or a
/// forwarded exchange, pauses the writer on the other side instead of growing the daemon's memory,
/// however much is offered; when the reader reads again, everything arrives byte-exact.
@Suite("atsproxy holds a stopped reader's bytes back", .serialized, .startsProcesses(timeLimit: .seconds(60)))
struct FlowControlProcessTests {
    /// Offered by the writer while the reader is stopped: far beyond any buffer, so a proxy that
    /// took it all would show it in its resident memory.
    static let offered = 256 * 1024 * 1024
    /// How much the daemon's resident memory may grow while the reader is stopped: the relay's own
    /// high-water mark is 512 KiB; the rest is room for the allocator and the loop.
    static let memoryBound = 48 * 1024 * 1024
    static let pattern = BytePattern(seed: 42)

    enum Route: String, CaseIterable, CustomTestStringConvertible {
        /// CONNECT, then HTTP inside the tunnel.
        case tunnel
        /// An absolute http:// URL the proxy forwards.
        case forwarded

        var testDescription: String { rawValue }
    }

    /// A counter shared between a test and the threads that move its bytes.
    final class Progress: Sendable {
        private let bytes = Locked(0)
        private let resumed = DispatchSemaphore(value: 0)
        private let verified = Locked<Int?>(nil)

        var count: Int { bytes.withLock { $0 } }
        func set(_ value: Int) { bytes.withLock { $0 = value } }
        func resume() { resumed.signal() }
        /// Blocks until ``resume()`` (at most `timeout` seconds: a test that failed before it must
        /// not hold the thread for ever).
        func awaitResume(timeout: Double = 120) { _ = resumed.wait(timeout: .now() + timeout) }
        /// How many bytes the receiving end checked against the pattern, once it is done.
        var verifiedCount: Int? { verified.withLock { $0 } }
        func finish(verified count: Int) { verified.withLock { $0 = count } }
    }

    /// The upstream: `GET` streams ``offered`` bytes of the pattern (counting what the kernel took);
    /// `POST` reads nothing of its body until resumed, then checks all of it and answers 200.
    /// Anything else (the proxy's TLS probe) gets a 400: it speaks cleartext.
    static func upstream(_ progress: Progress) throws -> RawTCPServer {
        try RawTCPServer { descriptor in
            guard let (head, rest) = receiveHead(descriptor) else {
                sendAll(
                    descriptor, Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
                )
                return
            }
            if head.hasPrefix("GET ") {
                sendAll(descriptor, Array("HTTP/1.1 200 OK\r\nContent-Length: \(offered)\r\n\r\n".utf8))
                pattern.send(offered, to: descriptor) { progress.set($0) }
                return
            }
            progress.awaitResume()
            var checked = 0
            if rest.withUnsafeBytes({ pattern.matches($0, at: 0) }) { checked = rest.count }
            if checked == rest.count {
                checked += pattern.receive(offered - rest.count, from: descriptor, startingAt: rest.count)
            }
            progress.finish(verified: checked)
            sendAll(descriptor, Array("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n".utf8))
        }
    }

    /// A daemon allowing http:// to localhost, on one loop thread.
    static func daemon(_ factory: CertificateFactory) throws -> DaemonProcess {
        let policy = try DaemonProcessTests.writePolicy(
            factory,
            "<key>NSExceptionDomains</key><dict><key>localhost</key><dict>"
                + "<key>NSExceptionAllowsInsecureHTTPLoads</key><true/></dict></dict>")
        return try DaemonProcess(
            directory: factory.directory,
            ["--listen", "127.0.0.1:0", "--policy", policy, "--system-roots", "off", "--threads", "1"])
    }

    /// Connects to the daemon and sends a request with `method` for `/flow` on `port`: through a
    /// tunnel (its 200 read first) or as an absolute URL. Returns the socket.
    static func request(_ method: String, route: Route, daemon: DaemonProcess, port: UInt16, headers: String = "")
        throws -> Int32
    {
        let client = try #require(connectLoopback(port: daemon.port))
        let target: String
        switch route {
        case .tunnel:
            sendAll(client, Array("CONNECT localhost:\(port) HTTP/1.1\r\nHost: localhost:\(port)\r\n\r\n".utf8))
            let established = try #require(receiveHead(client))
            try #require(established.head.hasPrefix("HTTP/1.1 200"), "\(established.head)")
            target = "/flow"
        case .forwarded:
            target = "http://localhost:\(port)/flow"
        }
        sendAll(client, Array("\(method) \(target) HTTP/1.1\r\nHost: localhost:\(port)\r\n\(headers)\r\n".utf8))
        return client
    }

    /// The daemon's resident memory, from /proc.
    static func residentBytes(_ daemon: DaemonProcess) -> Int {
        let status =
            (try? String(contentsOfFile: "/proc/\(daemon.process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }

    /// Waits until `progress` stops growing (the writer is blocked) and returns where it stopped:
    /// two readings a second apart that agree. Nil when it is still moving after 20 s. The seconds
    /// are the definition of "stopped": a writer blocked in send(2) says so nowhere else. A machine
    /// too slow to move a byte for a second makes the plateau early and lower, which the bounds
    /// the tests check (well under what was offered, memory bounded) still hold for.
    static func plateau(of progress: Progress) -> Int? {
        Thread.sleep(forTimeInterval: 1)
        var last = progress.count
        for _ in 0..<20 {
            Thread.sleep(forTimeInterval: 1)
            let now = progress.count
            if now == last { return now }
            last = now
        }
        return nil
    }

    /// Whether the upstream's count reaches `total` (its writer thread counts after each
    /// send returns).
    static func reaches(_ progress: Progress, _ total: Int) -> Bool {
        eventually(interval: 0.01) { progress.count >= total }
    }

    /// One small exchange, so the daemon's memory is measured after its first connection's
    /// one-time costs (the probe threads, the loop's buffers).
    static func warmUp(_ daemon: DaemonProcess) {
        _ = exchangeRaw(port: daemon.port, Array("GET http://localhost:1/ HTTP/1.1\r\nHost: localhost:1\r\n\r\n".utf8))
    }

    @Test(
        "a client that stops reading a download pauses the upstream, and the daemon's memory stays bounded",
        arguments: Route.allCases)
    func clientStopsReading(route: Route) throws {
        let factory = try CertificateFactory()
        let progress = Progress()
        let upstream = try Self.upstream(progress)
        let daemon = try Self.daemon(factory)
        Self.warmUp(daemon)
        let baseline = Self.residentBytes(daemon)
        let client = try Self.request("GET", route: route, daemon: daemon, port: upstream.port)
        var clientOpen = true
        defer { if clientOpen { close(client) } }

        let stalledAt = try #require(Self.plateau(of: progress), "the upstream never stopped writing")
        let grown = Self.residentBytes(daemon) - baseline
        #expect(stalledAt < Self.offered / 2, "the upstream wrote \(stalledAt) bytes to a stopped reader")
        #expect(grown < Self.memoryBound, "the daemon grew by \(grown) bytes")

        // The reader reads again: the writer resumes, and every byte arrives in order.
        let response = try #require(receiveHead(client))
        #expect(response.head.hasPrefix("HTTP/1.1 200"), "\(response.head)")
        let first = response.rest.withUnsafeBytes { Self.pattern.matches($0, at: 0) }
        #expect(first)
        let received =
            response.rest.count
            + Self.pattern.receive(
                Self.offered - response.rest.count, from: client, startingAt: response.rest.count, wait: 60)
        #expect(received == Self.offered)
        // The upstream counts a write once send(2) returns, which may be after the client has read it.
        #expect(Self.reaches(progress, Self.offered), "the upstream counted \(progress.count) bytes")
        // Closed first: a graceful stop would otherwise wait for the tunnel to end.
        close(client)
        clientOpen = false
        #expect(daemon.terminate() == 0)
    }

    @Test(
        "an upstream that stops reading an upload pauses the client, and the daemon's memory stays bounded",
        arguments: Route.allCases)
    func upstreamStopsReading(route: Route) throws {
        let factory = try CertificateFactory()
        let upstreamProgress = Progress()
        let upstream = try Self.upstream(upstreamProgress)
        let daemon = try Self.daemon(factory)
        Self.warmUp(daemon)
        let baseline = Self.residentBytes(daemon)
        let client = try Self.request(
            "POST", route: route, daemon: daemon, port: upstream.port, headers: "Content-Length: \(Self.offered)\r\n")
        var clientOpen = true
        defer { if clientOpen { close(client) } }
        let clientProgress = Progress()
        let sender = Thread {
            Self.pattern.send(Self.offered, to: client) { clientProgress.set($0) }
            clientProgress.resume()  // Marks the end of sending.
        }
        sender.start()

        let stalledAt = try #require(Self.plateau(of: clientProgress), "the client never stopped writing")
        let grown = Self.residentBytes(daemon) - baseline
        #expect(stalledAt < Self.offered / 2, "the client wrote \(stalledAt) bytes to a stopped reader")
        #expect(grown < Self.memoryBound, "the daemon grew by \(grown) bytes")

        // The upstream reads again: the client's writes resume, and every byte arrives in order.
        upstreamProgress.resume()
        let answer = try #require(receiveHead(client, wait: 60))
        #expect(answer.head.hasPrefix("HTTP/1.1 200"), "\(answer.head)")
        #expect(clientProgress.count == Self.offered)
        #expect(upstreamProgress.verifiedCount == Self.offered)
        // Closed first: a graceful stop would otherwise wait for the tunnel to end.
        close(client)
        clientOpen = false
        #expect(daemon.terminate() == 0)
    }
}
