import ATSPolicy
import Foundation
import POSIX
import ProxyCore
import TLSTestSupport
import Testing

/// `--connect-timeout` against a server that never completes a connection: a listener whose accept
/// queue is full drops every new SYN, so a connect to it neither succeeds nor fails.
@Suite("Connect timeout", .startsProcesses(timeLimit: .seconds(60)))
struct ConnectTimeoutTests {
    /// A listener with the shortest accept queue, which accepts its first `accepting` connections
    /// (answering each with a 400, so the proxy's probe finds a cleartext server) and then none.
    final class StuckListener: Sendable {
        let port: UInt16
        private let descriptor: Int32
        private let fillers = Locked<[Int32]>([])

        init(accepting: Int) throws {
            let (descriptor, port) = try #require(
                bindLoopback(listening: 0), "listen: \(String(cString: strerror(errno)))")
            self.descriptor = descriptor
            self.port = port
            Thread.detachNewThread {
                for _ in 0..<accepting {
                    let connection = accept(descriptor, nil, nil)
                    guard connection >= 0 else { return }
                    _ = receiveAvailable(connection, wait: 5)
                    sendAll(
                        connection,
                        Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
                    close(connection)
                }
            }
        }

        deinit {
            for filler in fillers.withLock({ $0 }) { close(filler) }
            shutdown(descriptor, Int32(SHUT_RDWR))
            close(descriptor)
        }

        /// Connects until the accept queue is full: a connect that has not completed after 300 ms
        /// is one the listener dropped. Returns whether it got there.
        func fill() -> Bool {
            for _ in 0..<16 {
                let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
                fillers.withLock { $0.append(client) }
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_port = port.bigEndian
                address.sin_addr.s_addr = inet_addr("127.0.0.1")
                _ = withUnsafePointer(to: &address) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                var entry = pollfd(fd: client, events: Int16(POLLOUT), revents: 0)
                if poll(&entry, 1, 300) == 0 { return true }
            }
            return false
        }
    }

    @Test("a forwarded request to a server that never completes the connection gets a 504 at the connect timeout")
    func forwardedRequest() throws {
        let factory = try compliantChain()
        let listener = try StuckListener(accepting: 0)
        try #require(listener.fill(), "the listener's queue never filled")
        let proxy = try TestProxy.start(factory, policyXML: insecureLocalhost) { $0.connectTimeout = .seconds(1) }
        defer { proxy.stop() }
        let client = try #require(connectLoopback(port: proxy.port))
        defer { close(client) }
        let sent = ContinuousClock.now
        sendAll(client, Array("GET http://localhost:\(listener.port)/ HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
        let answer = try #require(receiveHead(client, wait: 8), "no answer from the proxy")
        let waited = ContinuousClock.now - sent
        #expect(answer.head.hasPrefix("HTTP/1.1 504 Gateway Timeout"), "\(answer.head)")
        #expect(waited >= .milliseconds(900) && waited < .seconds(3), "answered after \(waited)")
        let line = try #require(try proxy.waitForLogLines(1).first)
        #expect(line.action == "failed", "\(line)")
        // The dialer tries every address of localhost in turn; 127.0.0.1's is the one that hangs.
        #expect(
            line.upstreamError?.contains("127.0.0.1:\(listener.port): the connection did not open within 1 s") == true,
            "\(line)")
    }

    @Test("a CONNECT to a server that no longer completes connections gets a 502 at the connect timeout")
    func tunnel() throws {
        let factory = try compliantChain()
        // localhost accepts cleartext here, so its tunnels open with no probe: the first one gets
        // through; then the queue fills.
        let listener = try StuckListener(accepting: 1)
        let proxy = try TestProxy.start(factory, policyXML: insecureLocalhost) { $0.connectTimeout = .seconds(1) }
        defer { proxy.stop() }
        let connect = Array(
            "CONNECT localhost:\(listener.port) HTTP/1.1\r\nHost: localhost:\(listener.port)\r\n\r\n".utf8)
        let first = try #require(connectLoopback(port: proxy.port))
        sendAll(first, connect)
        let established = receiveHead(first)
        close(first)
        #expect(established?.head.hasPrefix("HTTP/1.1 200") == true, "\(established?.head ?? "no answer")")
        _ = try proxy.waitForLogLines(1)
        try #require(listener.fill(), "the listener's queue never filled")

        let second = try #require(connectLoopback(port: proxy.port))
        defer { close(second) }
        let sent = ContinuousClock.now
        sendAll(second, connect)
        let answer = try #require(receiveHead(second, wait: 8), "no answer from the proxy")
        let waited = ContinuousClock.now - sent
        #expect(answer.head.hasPrefix("HTTP/1.1 502 Bad Gateway"), "\(answer.head)")
        #expect(waited >= .milliseconds(900) && waited < .seconds(3), "answered after \(waited)")
        let lines = try proxy.waitForLogLines(2)
        let line = try #require(lines.count == 2 ? lines.last : nil, "\(lines)")
        #expect(line.action == "failed", "\(line)")
        // Each address tried is named, with what it did (localhost may also resolve to ::1).
        #expect(
            line.upstreamError?.hasPrefix(
                "cannot connect to localhost port \(listener.port): 127.0.0.1:\(listener.port): the connection did not open within 1 s"
            )
                == true,
            "\(line)")
    }
}
