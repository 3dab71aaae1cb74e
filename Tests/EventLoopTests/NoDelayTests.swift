import Dispatch
import EventLoop
import Glibc
import POSIX
import Testing

/// Every TCP connection the proxy holds sends each write at once: with Nagle's algorithm a relayed
/// write after a small unacknowledged one waited for the peer's delayed ACK (about 40 ms), which
/// make bench-latency measured on every tunnelled response.
@Suite("TCP_NODELAY on the proxy's connections")
struct NoDelayTests {
    @Test("an accepted connection and an outgoing one both have TCP_NODELAY set")
    func bothDirections() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 4) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        try #require(bound)
        let target = try SocketAddress(parsing: "127.0.0.1:\(UInt16(bigEndian: address.sin_port))")
        let connected = DispatchSemaphore(value: 0)
        let (loop, outgoingNoDelay) = try EventLoopThread.start { base in
            let outgoing = try SocketStream(base: base, connectingTo: target)
            outgoing.onEvent = { _, event in if event == .connected { connected.signal() } }
            return (keepAlive: ClosedAtStop(outgoing), info: outgoing.sendsSmallWritesAtOnce)
        }
        defer { loop.stop() }
        #expect(connected.wait(timeout: .now() + 10) == .success)
        #expect(outgoingNoDelay)
        let accepted = accept(listener, nil, nil)
        try #require(accepted >= 0)
        let (acceptLoop, acceptedNoDelay) = try EventLoopThread.start { base in
            let connection = try SocketStream(base: base, descriptor: accepted)
            return (keepAlive: ClosedAtStop(connection), info: connection.sendsSmallWritesAtOnce)
        }
        defer { acceptLoop.stop() }
        #expect(acceptedNoDelay)
    }
}

/// Keeps a connection with its loop and closes it when the loop stops (a connection retains itself
/// until closed).
private final class ClosedAtStop: LoopResident {
    let connection: SocketStream
    init(_ connection: SocketStream) { self.connection = connection }
    func loopEnded() { connection.close() }
}
