import ATSPolicy
import Foundation
import POSIX
import ProxyCore
import TLSTestSupport
import Testing

/// Half-close through a CONNECT tunnel, in both orders: each side's FIN reaches the other once what
/// it sent before is delivered, the other direction keeps flowing, and the tunnel ends when both
/// have. A half-closed tunnel is idle only when its open direction stops moving.
@Suite("Half-close through a tunnel", .startsProcesses(timeLimit: .seconds(60)))
struct TunnelHalfCloseTests {
    /// What the upstream saw and did, in order, for the test to check after the fact.
    final class Journal: Sendable {
        private let entries = Locked<[String]>([])
        func note(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }

        /// Waits until `entry` is noted (at most `wait` seconds).
        func await(_ entry: String, wait: Double = 30) -> Bool {
            eventually(timeout: wait, interval: 0.01) { all.contains(entry) }
        }
    }

    /// An upstream for `handle` after a plain GET's head; the proxy's TLS probe gets a 400.
    static func upstream(_ handle: @escaping @Sendable (Int32, [UInt8]) -> Void) throws -> RawTCPServer {
        try RawTCPServer { descriptor in
            guard let (head, rest) = receiveHead(descriptor), head.hasPrefix("GET ") else {
                sendAll(
                    descriptor, Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
                )
                return
            }
            handle(descriptor, rest)
        }
    }

    /// A tunnel through a proxy to `port` (cleartext allowed for localhost), with the first request
    /// sent; returns the client's socket.
    static func openTunnel(_ proxy: TestProxy, to port: UInt16) throws -> Int32 {
        let client = try #require(connectLoopback(port: proxy.port))
        sendAll(client, Array("CONNECT localhost:\(port) HTTP/1.1\r\nHost: localhost:\(port)\r\n\r\n".utf8))
        let established = try #require(receiveHead(client))
        try #require(established.head.hasPrefix("HTTP/1.1 200"), "\(established.head)")
        sendAll(client, Array("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
        return client
    }

    /// Everything the peer sends until it closes (at most `wait` seconds); nil if it stays open.
    static func readToEnd(_ descriptor: Int32, wait: Double = 5) -> [UInt8]? {
        let deadline = Date().addingTimeInterval(wait)
        var received: [UInt8] = []
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0, let chunk = receiveAvailable(descriptor, wait: left) else { return nil }
            if chunk.isEmpty { return received }
            received += chunk
        }
    }

    @Test("the device ends first: the server gets the FIN after the request, and still answers for as long as it likes")
    func deviceEndsFirst() throws {
        let factory = try compliantChain()
        let journal = Journal()
        let upstream = try Self.upstream { descriptor, _ in
            // The device's FIN arrives with nothing after the request.
            journal.note(Self.readToEnd(descriptor) == [] ? "device ended" : "device did not end")
            // Three parts, each well inside the idle timeout of the last, together well past it:
            // the scenario is a server that answers slowly, so these pauses are sleeps.
            for part in 1...3 {
                Thread.sleep(forTimeInterval: 0.6)
                sendAll(descriptor, Array("part \(part)\n".utf8))
            }
            journal.note("sent")
            // Then silence, with the server's side still open: the tunnel is idle from here. The
            // device's FIN came already, so the proxy's close shows only as a reset to a send.
            guard journal.await("device saw the end") else { return }
            // Sends until one fails (the reset to an earlier one came back): the proxy's close.
            let closed = eventually { !sendAll(descriptor, Array("late\n".utf8)) }
            journal.note(closed ? "proxy closed" : "still open")
        }
        let proxy = try TestProxy.start(factory, policyXML: insecureLocalhost) { $0.idleTimeout = .seconds(1) }
        defer { proxy.stop() }
        let client = try Self.openTunnel(proxy, to: upstream.port)
        defer { close(client) }
        shutdown(client, Int32(SHUT_WR))

        #expect(journal.await("device ended"), "\(journal.all)")
        let received = Self.readToEnd(client, wait: 8)
        journal.note("device saw the end")
        #expect(received.map { String(decoding: $0, as: UTF8.self) } == "part 1\npart 2\npart 3\n")
        #expect(journal.await("proxy closed"), "\(journal.all)")
        #expect(journal.all == ["device ended", "sent", "device saw the end", "proxy closed"], "\(journal.all)")
        let line = try #require(try proxy.waitForLogLines(1).first)
        #expect(line.action == "allowed", "\(line)")
        #expect(line.upstreamError == "closed: idle for 1 s, no byte moved either way", "\(line)")
        #expect(line.bytesDown == 21, "\(line)")
        // The open direction kept it alive past the timeout: 1.8 s of parts, then 1 s of silence.
        #expect((line.fields["duration_ms"] as? Int ?? 0) >= 2700, "\(line)")
    }

    @Test(
        "the server ends first: the device gets the FIN after the answer, and may still send; its end reaches the server"
    )
    func serverEndsFirst() throws {
        let factory = try compliantChain()
        let journal = Journal()
        let upstream = try Self.upstream { descriptor, _ in
            sendAll(descriptor, Array("answer\n".utf8))
            shutdown(descriptor, Int32(SHUT_WR))
            journal.note("server ended")
            let after = Self.readToEnd(descriptor)
            journal.note("got: " + (after.map { String(decoding: $0, as: UTF8.self) } ?? "no end"))
        }
        let proxy = try TestProxy.start(factory, policyXML: insecureLocalhost)
        defer { proxy.stop() }
        let client = try Self.openTunnel(proxy, to: upstream.port)
        defer { close(client) }

        let answer = Self.readToEnd(client)
        #expect(
            answer.map { String(decoding: $0, as: UTF8.self) } == "answer\n",
            "the server's FIN did not follow its answer")
        sendAll(client, Array("after the server's end\n".utf8))
        shutdown(client, Int32(SHUT_WR))
        #expect(journal.await("got: after the server's end\n"), "\(journal.all)")
        let line = try #require(try proxy.waitForLogLines(1).first)
        #expect(line.action == "allowed", "\(line)")
        #expect(line.upstreamError == nil, "\(line)")
        #expect(line.bytesDown == 7, "\(line)")
        #expect(
            line.fields["bytes_up"] as? Int
                == "GET / HTTP/1.1\r\nHost: localhost\r\n\r\nafter the server's end\n".utf8.count, "\(line)")
    }
}
