import Dispatch
import Foundation
import Glibc
import POSIX
import TLSTestSupport
import Testing

/// A TCP forwarder to a server on 127.0.0.1 that counts, per connection in the order accepted,
/// the bytes it received (from the proxy: its probe, then the tunnel) and passes on, so a test can
/// tell whether a tunnel carried anything to the server.
final class CountingForwarder: Sendable {
    private final class Counts: Sendable {
        let received = Locked<[Int]>([])
        let ended = Locked<Set<Int>>([])
    }

    private let counts = Counts()
    private let server: RawTCPServer
    var port: UInt16 { server.port }

    init(to target: UInt16) throws {
        let counts = self.counts
        server = try RawTCPServer { client in
            let index = counts.received.withLock {
                $0.append(0)
                return $0.count - 1
            }
            defer { counts.ended.withLock { _ = $0.insert(index) } }
            guard let upstream = connectLoopback(port: target) else { return }
            defer { close(upstream) }
            let back = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                pump(from: upstream, to: client) { _ in }
                shutdown(client, Int32(SHUT_WR))
                back.signal()
            }
            pump(from: client, to: upstream) { count in counts.received.withLock { $0[index] += count } }
            shutdown(upstream, Int32(SHUT_WR))
            _ = back.wait(timeout: .now() + 10)
        }
    }

    /// The bytes each connection received so far, in the order they were accepted.
    var received: [Int] { counts.received.withLock { $0 } }

    /// What connection `index` received once it has ended (at most `wait` seconds), else nil.
    func receivedOnceEnded(connection index: Int, wait: Double = 10) -> Int? {
        let ended = eventually(timeout: wait, interval: 0.02) { counts.ended.withLock { $0.contains(index) } }
        return ended ? received[index] : nil
    }

    /// How many connections carried any byte, once every connection accepted so far has ended (at
    /// most `wait` seconds each), else nil. The probe's carries its ClientHello; a tunnel that sent
    /// nothing adds none, whether the proxy opened one connection for it or gave one up first.
    func connectionsCarryingBytesOnceEnded(wait: Double = 10) -> Int? {
        var carrying = 0
        for index in received.indices {
            guard let count = receivedOnceEnded(connection: index, wait: wait) else { return nil }
            if count > 0 { carrying += 1 }
        }
        return carrying
    }

    /// Waits until the tunnel's connection, whichever it is in the order accepted, has received at
    /// least `count` bytes: two connections carried bytes (the probe's ClientHello, and the
    /// tunnel's), one of them `count` or more (at most `wait` seconds).
    func awaitTunnelReceived(atLeast count: Int, wait: Double = 10) -> Bool {
        eventually(timeout: wait, interval: 0.02) {
            let now = received.filter { $0 > 0 }
            return now.count >= 2 && now.contains { $0 >= count }
        }
    }

    /// Waits until connection `index` has received at least `count` bytes (at most `wait` seconds).
    func awaitReceived(connection index: Int, atLeast count: Int, wait: Double = 10) -> Bool {
        eventually(timeout: wait, interval: 0.02) {
            let now = received
            return index < now.count && now[index] >= count
        }
    }
}

/// Copies `source` to `target` until `source` ends, stalls for 10 s, or `target` goes away.
private func pump(from source: Int32, to target: Int32, counting: (Int) -> Void) {
    while let chunk = receiveAvailable(source, wait: 10), !chunk.isEmpty {
        counting(chunk.count)
        guard sendAll(target, chunk) else { return }
    }
}

/// An upstream that speaks first: a banner as soon as a connection is accepted (then it reads and
/// drops what comes, until the end), or with `firehose` bytes for as long as anyone takes them.
/// Counts what it managed to send.
final class SpeaksFirstServer: Sendable {
    static let banner = Array("SSH-2.0-OpenSSH_9.6 speaks-first-test\r\n".utf8)
    private let server: RawTCPServer
    private let box: SentBox
    var port: UInt16 { server.port }

    /// - Parameter delay: seconds the server waits before its banner (a device may speak first).
    init(firehose: Bool, delay: Double = 0) throws {
        let box = SentBox()
        self.box = box
        server = try RawTCPServer { descriptor in
            // The scenario: a server that speaks late (after the device may have spoken first).
            if delay > 0 { usleep(useconds_t(delay * 1_000_000)) }
            if firehose {
                let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 65_536)
                while sendAll(descriptor, chunk) { box.add(chunk.count) }
            } else {
                if sendAll(descriptor, Self.banner) { box.add(Self.banner.count) }
                _ = awaitPeerClose(descriptor, wait: 20)
            }
        }
    }

    private final class SentBox: Sendable {
        let total = Locked<Int>(0)
        func add(_ count: Int) { total.withLock { $0 += count } }
    }

    /// What the server has sent over all its connections (the probe's included).
    var totalSent: Int { box.total.withLock { $0 } }
}

/// Opens a tunnel through `proxy` to localhost:`port` and returns the device's socket once the
/// 200 is in; nil (with an issue) when the proxy answers otherwise.
func openRawTunnel(_ proxy: TestProxy, to port: UInt16, sourceLocation: Testing.SourceLocation = #_sourceLocation)
    -> Int32?
{
    guard let (client, rest) = openRawTunnelKeepingBytes(proxy, to: port, sourceLocation: sourceLocation) else {
        return nil
    }
    #expect(rest.isEmpty, "bytes came with the 200: \(rest.count)", sourceLocation: sourceLocation)
    return client
}

/// The same, with the bytes that came right behind the 200 (a server that spoke first).
func openRawTunnelKeepingBytes(
    _ proxy: TestProxy, to port: UInt16, sourceLocation: Testing.SourceLocation = #_sourceLocation
) -> (Int32, [UInt8])? {
    guard let client = connectLoopback(port: proxy.port) else {
        Issue.record("cannot connect to the proxy", sourceLocation: sourceLocation)
        return nil
    }
    sendAll(client, Array("CONNECT localhost:\(port) HTTP/1.1\r\nHost: localhost:\(port)\r\n\r\n".utf8))
    guard let established = receiveHead(client), established.head.hasPrefix("HTTP/1.1 200") else {
        Issue.record("the CONNECT was not answered 200", sourceLocation: sourceLocation)
        close(client)
        return nil
    }
    return (client, established.rest)
}

/// Everything the peer sends until it closes (at most `wait` seconds), and whether it closed.
func readUntilClosed(_ descriptor: Int32, wait: Double = 10) -> (bytes: [UInt8], closed: Bool) {
    let deadline = Date().addingTimeInterval(wait)
    var received: [UInt8] = []
    while true {
        let left = deadline.timeIntervalSinceNow
        guard left > 0, let chunk = receiveAvailable(descriptor, wait: left) else { return (received, false) }
        if chunk.isEmpty { return (received, true) }
        received += chunk
    }
}

/// Reads until at least `count` bytes are in (at most `wait` seconds), or the peer closes.
func readAtLeast(_ count: Int, from descriptor: Int32, wait: Double = 10) -> [UInt8] {
    let deadline = Date().addingTimeInterval(wait)
    var received: [UInt8] = []
    while received.count < count {
        let left = deadline.timeIntervalSinceNow
        guard left > 0, let chunk = receiveAvailable(descriptor, wait: left), !chunk.isEmpty else { break }
        received += chunk
    }
    return received
}
