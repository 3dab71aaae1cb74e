import Dispatch
import EventLoop
import Glibc
import POSIX
import Testing

/// Two connected Unix stream sockets, non-blocking on neither side: `[0]` for a SocketStream, `[1]`
/// for the test thread.
private func socketPair() throws -> (Int32, Int32) {
    var descriptors: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &descriptors) == 0 else {
        throw EventError("socketpair")
    }
    var limit = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(descriptors[1], SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    return (descriptors[0], descriptors[1])
}

/// What a test's loop must keep alive.
private final class KeepAlive {
    let objects: [AnyObject]
    init(_ objects: [AnyObject]) { self.objects = objects }
}

private func sendAll(_ descriptor: Int32, _ bytes: [UInt8]) {
    bytes.withUnsafeBytes { buffer in
        var offset = 0
        while offset < buffer.count {
            let sent = send(descriptor, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
            if sent <= 0 { return }
            offset += sent
        }
    }
}

/// Connections on plain events: what a method finds is reported from the loop, never from inside
/// the method, and the socket is only asked to wait for when it would block.
@Suite("Event loop: connection reads, writes and connects")
struct ConnectionTests {
    @Test("bytes a peer sent already are read at once, without onReadable; an end found then comes from the loop")
    func readImmediately() throws {
        let (ours, theirs) = try socketPair()
        defer { close(theirs) }
        sendAll(theirs, Array("CONNECT example.com:443 HTTP/1.1\r\n\r\n".utf8))
        shutdown(theirs, Int32(SHUT_WR))
        let events = Locked<[String]>([])
        let ended = DispatchSemaphore(value: 0)
        let (loop, available) = try EventLoopThread.start { base in
            let connection = try SocketStream(base: base, descriptor: ours)
            connection.onReadable = { _ in events.withLock { $0.append("readable") } }
            connection.onEvent = { connection, event in
                events.withLock { $0.append("\(event)") }
                connection.close()
                ended.signal()
            }
            connection.readImmediately()
            // Reported from the loop: nothing has been called yet.
            events.withLock { $0.append("returned") }
            return (keepAlive: connection, info: connection.availableBytes)
        }
        defer { loop.stop() }
        #expect(available == 36)
        #expect(ended.wait(timeout: .now() + 10) == .success)
        #expect(events.withLock { $0 } == ["returned", "\(StreamEvent.endOfStream)"])
    }

    @Test("a write the socket takes at once still reports the drain, from the loop")
    func drainAfterImmediateWrite() throws {
        let (ours, theirs) = try socketPair()
        defer { close(theirs) }
        let order = Locked<[String]>([])
        let (loop, pendingAfterWrite) = try EventLoopThread.start { base in
            let connection = try SocketStream(base: base, descriptor: ours)
            connection.setReading(false)
            connection.write(Array("answer\n".utf8))
            let pending = connection.pendingOutputBytes
            connection.onDrained = { connection in
                order.withLock { $0.append("drained") }
                connection.shutdownWrite()
                connection.close()
            }
            connection.setDrainedMark(0)
            order.withLock { $0.append("returned") }
            return (keepAlive: connection, info: pending)
        }
        defer { loop.stop() }
        #expect(pendingAfterWrite == 0)
        #expect(readAll(theirs, count: 100) == Array("answer\n".utf8))  // Then the end of stream.
        #expect(order.withLock { $0 } == ["returned", "drained"])
    }

    @Test("what the socket cannot take waits in the output, is written as the peer reads, and the mark reports it")
    func slowReader() throws {
        let (ours, theirs) = try socketPair()
        defer { close(theirs) }
        let payload = (0..<4_194_304).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 12) }
        let drained = DispatchSemaphore(value: 0)
        let (loop, pendingAfterWrite) = try EventLoopThread.start { base in
            let connection = try SocketStream(base: base, descriptor: ours)
            connection.setReading(false)
            connection.write(payload)
            let pending = connection.pendingOutputBytes
            connection.setDrainedMark(0)
            connection.onDrained = { connection in
                connection.shutdownWrite()
                connection.close()
                drained.signal()
            }
            return (keepAlive: connection, info: pending)
        }
        defer { loop.stop() }
        #expect(pendingAfterWrite > 0 && pendingAfterWrite < payload.count)
        let received = readAll(theirs, count: payload.count + 1)
        #expect(received.count == payload.count)
        #expect(received == payload)
        #expect(drained.wait(timeout: .now() + 10) == .success)
    }

    @Test(
        "after its bytes, reset() ends the connection with a reset (ECONNRESET), close() with an end of stream",
        arguments: [true, false])
    func resetOrClose(_ resetting: Bool) throws {
        let (ours, theirs) = try loopbackPair()
        defer { close(theirs) }
        let (loop, _) = try EventLoopThread.start { base in
            let connection = try SocketStream(base: base, descriptor: ours)
            connection.setReading(false)
            connection.onDrained = { connection in
                if resetting { connection.reset() } else { connection.close() }
            }
            connection.setDrainedMark(0)
            connection.write(Array("part of a body".utf8))
            return (keepAlive: connection, info: 0)
        }
        defer { loop.stop() }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        var ending: Int32 = -1
        while true {
            let count = recv(theirs, &chunk, chunk.count, 0)
            guard count > 0 else {
                ending = count == 0 ? 0 : errno
                break
            }
            received += chunk[..<count]
        }
        #expect(String(decoding: received, as: UTF8.self) == "part of a body", "the bytes written before arrive first")
        #expect(ending == (resetting ? ECONNRESET : 0), "\(String(cString: strerror(ending)))")
    }

    /// libevent keeps the last timeout a persistent event was added with and arms it again after the
    /// event's next activation, however the event was re-added since: a read limit that was removed
    /// (a ClientHello's deadline, before an HTTP/2 relay that sets none) came back after the next read.
    @Test("a read limit that was removed stays removed after the next read")
    func removedLimitStaysRemoved() throws {
        let events = Locked<[String]>([])
        let secondByte = DispatchSemaphore(value: 0)
        let firstByte = DispatchSemaphore(value: 0)
        let (loop, port) = try EventLoopThread.start { base in
            var accepted: [SocketStream] = []
            let listener = try Listener(base: base, address: try SocketAddress(parsing: "127.0.0.1:0")) {
                descriptor, _ in
                guard let connection = try? SocketStream(base: base, descriptor: descriptor) else { return }
                accepted.append(connection)
                connection.setTimeouts(read: .milliseconds(200), write: nil)
                connection.setReading(true)
                // Removed while the read is armed, before any byte.
                connection.setTimeouts(read: nil, write: nil)
                connection.onReadable = { connection in
                    let bytes = connection.read()
                    events.withLock { $0.append("read \(bytes.count)") }
                    guard events.withLock({ $0.count }) > 1 else {
                        firstByte.signal()
                        return
                    }
                    connection.close()  // A stream holds itself for its callbacks until it is closed.
                    secondByte.signal()
                }
                connection.onEvent = { connection, event in
                    events.withLock { $0.append("event \(event)") }
                    connection.close()
                    secondByte.signal()
                }
            }
            return (keepAlive: KeepAlive([listener]), info: listener.address.port)
        }
        defer { loop.stop() }
        let client = try #require(connectLoopbackForTest(port: port))
        defer { close(client) }
        #expect(send(client, "a", 1, 0) == 1)
        #expect(firstByte.wait(timeout: .now() + 10) == .success)
        // Five times the removed limit with nothing to read: no timeout may come.
        usleep(1_000_000)
        #expect(send(client, "b", 1, 0) == 1)
        #expect(secondByte.wait(timeout: .now() + 10) == .success)
        #expect(events.withLock { $0 } == ["read 1", "read 1"])
    }

    @Test("a connect reports connected and sends what was written before; a refused one reports the error")
    func connecting() throws {
        // A port nothing listens on: bound by the kernel's choice, then released.
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(probe, socketAddress, length)
                return getsockname(probe, socketAddress, &length)
            }
        }
        let closedPort = UInt16(bigEndian: address.sin_port)
        close(probe)

        let results = Locked<[String]>([])
        let done = DispatchSemaphore(value: 0)
        let (loop, _) = try EventLoopThread.start { base in
            var accepted: [SocketStream] = []
            let listener = try Listener(base: base, address: try SocketAddress(parsing: "127.0.0.1:0")) {
                descriptor, _ in
                guard let connection = try? SocketStream(base: base, descriptor: descriptor) else { return }
                accepted.append(connection)
                connection.onReadable = { connection in
                    results.withLock { $0.append("server read " + String(decoding: connection.read(), as: UTF8.self)) }
                    connection.close()
                    done.signal()
                }
            }
            let outgoing = try SocketStream(base: base, connectingTo: listener.address)
            outgoing.setTimeouts(read: nil, write: .seconds(5))
            outgoing.write(Array("ping".utf8))
            outgoing.onEvent = { connection, event in
                results.withLock { $0.append("outgoing \(event)") }
                if event != .connected { connection.close() }
            }
            let refused = try SocketStream(
                base: base, connectingTo: try SocketAddress(parsing: "127.0.0.1:\(closedPort)"))
            refused.setTimeouts(read: nil, write: .seconds(5))
            refused.onEvent = { connection, event in
                results.withLock { $0.append("refused \(event)") }
                connection.close()
                done.signal()
            }
            return (keepAlive: KeepAlive([listener, outgoing]), info: 0)
        }
        defer { loop.stop() }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(done.wait(timeout: .now() + 10) == .success)
        let seen = results.withLock { $0 }
        #expect(seen.contains("outgoing connected"))
        #expect(seen.contains("server read ping"))
        #expect(seen.contains("refused \(StreamEvent.error(ECONNREFUSED))"))
    }

    @Test(
        "the resolver answers from /etc/hosts and numeric hosts with every address, and a cancelled lookup never answers"
    )
    func lookUp() throws {
        let answers = Locked<[String]>([])
        let done = DispatchSemaphore(value: 0)
        let (loop, _) = try EventLoopThread.start { base in
            let resolver = try DNSResolver(base: base)
            resolver.lookUp("localhost", port: 8443) { result in
                answers.withLock {
                    $0.append(
                        "localhost " + ((try? result.get())?.map(\.description).joined(separator: " ") ?? "failed"))
                }
                done.signal()
            }
            resolver.lookUp("192.0.2.7", port: 80) { result in
                answers.withLock {
                    $0.append("numeric " + ((try? result.get())?.map(\.description).joined(separator: " ") ?? "failed"))
                }
                done.signal()
            }
            let cancelled = resolver.lookUp("no-such-name.invalid", port: 80) { _ in
                answers.withLock { $0.append("cancelled answered") }
            }
            cancelled.cancel()
            return (keepAlive: KeepAlive([resolver]), info: 0)
        }
        defer { loop.stop() }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(done.wait(timeout: .now() + 10) == .success)
        let seen = answers.withLock { $0 }
        #expect(seen.contains { $0.hasPrefix("localhost ") && $0.contains("127.0.0.1:8443") }, "\(seen)")
        #expect(seen.contains("numeric 192.0.2.7:80"), "\(seen)")
        #expect(!seen.contains("cancelled answered"))
    }
}

/// A blocking TCP connection to 127.0.0.1:`port`, or nil.
private func connectLoopbackForTest(port: UInt16) -> Int32? {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard descriptor >= 0 else { return nil }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = port.bigEndian
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard result == 0 else {
        close(descriptor)
        return nil
    }
    return descriptor
}
