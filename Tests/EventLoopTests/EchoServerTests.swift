import EventLoop
import Foundation
import Testing

/// An echo server on the event loop: the smallest real use of listeners, connections, relaying
/// without copies, and closing on end of stream.
final class EchoServer {
    let listener: Listener

    init(base: EventBase) throws {
        listener = try Listener(base: base, address: try SocketAddress(parsing: "127.0.0.1:0")) { descriptor, _ in
            guard let connection = try? SocketStream(base: base, descriptor: descriptor) else { return }
            connection.onReadable = { $0.moveInput(to: $0) }
            connection.onEvent = { connection, event in
                if event == .endOfStream {
                    // Flush what is left, then close once the output has drained.
                    connection.onDrained = { $0.close() }
                    connection.setDrainedMark(0)
                    if connection.pendingOutputBytes == 0 { connection.close() }
                } else {
                    connection.close()
                }
            }
        }
    }
}

/// A blocking client socket for tests. Closed on exec, as every test socket: the test process is
/// shared with tests that start processes, which would otherwise inherit it.
func connectClient(port: UInt16) throws -> Int32 {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let status = withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard status == 0 else {
        close(descriptor)
        throw EventError("connect")
    }
    var limit = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    return descriptor
}

func readAll(_ descriptor: Int32, count: Int) -> [UInt8] {
    var received: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while received.count < count {
        let n = recv(descriptor, &chunk, chunk.count, 0)
        if n <= 0 { break }
        received += chunk[0..<n]
    }
    return received
}

@Suite("Event loop: listener and connections on real sockets")
struct EchoServerTests {
    @Test("a megabyte sent by several clients comes back byte-exact; the loop stops cleanly")
    func echo() throws {
        let (loop, port) = try EventLoopThread.start { base in
            let server = try EchoServer(base: base)
            return (keepAlive: server, info: server.listener.address.port)
        }
        defer { loop.stop() }
        #expect(port != 0)
        for client in 0..<4 {
            let descriptor = try connectClient(port: port)
            defer { close(descriptor) }
            let payload = (0..<1_048_576).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ client) }
            // Send from a second thread so the echo can flow back while we write.
            let sender = Thread {
                payload.withUnsafeBytes { bytes in
                    var offset = 0
                    while offset < bytes.count {
                        let n = send(descriptor, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                        if n <= 0 { break }
                        offset += n
                    }
                }
                shutdown(descriptor, Int32(SHUT_WR))
            }
            sender.start()
            let echoed = readAll(descriptor, count: payload.count + 1)
            #expect(echoed.count == payload.count)
            #expect(echoed == payload)
        }
    }

    @Test("the listener reports the port the kernel chose, and addresses print as given")
    func addresses() throws {
        #expect(try SocketAddress(parsing: "[::1]:8080").description == "[::1]:8080")
        #expect(try SocketAddress(parsing: "127.0.0.1:80").port == 80)
        #expect(throws: EventError.self) { try SocketAddress(parsing: "not an address") }
    }

    @Test("address bytes are lent in network order, 4 for IPv4 and 16 for IPv6")
    func addressBytes() throws {
        #expect(try SocketAddress(parsing: "192.0.2.10:443").withAddressBytes { Array($0) } == [192, 0, 2, 10])
        #expect(
            try SocketAddress(parsing: "[2001:db8::1]:443").withAddressBytes { Array($0) }
                == [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [1])
    }

    @Test("binding an address this machine does not have is an error naming the address")
    func unbindable() throws {
        do {
            _ = try EventLoopThread.start { base in
                let listener = try Listener(base: base, address: try SocketAddress(parsing: "192.0.2.1:8080")) { _, _ in
                }
                return (keepAlive: listener, info: 0)
            }
            Issue.record("expected the bind to fail")
        } catch let error as EventError {
            #expect(error.description.contains("192.0.2.1:8080"))
            #expect(error.errno == EADDRNOTAVAIL)
        }
    }
}
