import Glibc

/// Sends `bytes` to 127.0.0.1:`port`, half-closes, and returns everything the server sent back
/// before closing (at most 10 seconds).
package func exchangeRaw(port: UInt16, _ bytes: [UInt8]) -> [UInt8] {
    guard let descriptor = connectLoopback(port: port) else { return [] }
    defer { close(descriptor) }
    return exchangeRaw(connected: descriptor, bytes)
}

/// The same over a socket the caller connected (and closes).
package func exchangeRaw(connected descriptor: Int32, _ bytes: [UInt8]) -> [UInt8] {
    var limit = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    _ = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    shutdown(descriptor, Int32(SHUT_WR))
    var received: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = recv(descriptor, &chunk, chunk.count, 0)
        if count <= 0 { break }
        received += chunk[0..<count]
    }
    return received
}

/// A socket for a test, closed on exec: the tests share one process, and a child another test
/// starts meanwhile (Process closes only the descriptors open when it prepares the spawn) would
/// otherwise keep a copy, so closing this one would not reach the peer, and a daemon would count
/// it among its own.
package func testSocket() -> Int32 {
    socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
}

/// A TCP connection to 127.0.0.1:`port`, or nil; the caller closes it.
package func connectLoopback(port: UInt16) -> Int32? {
    let descriptor = testSocket()
    guard descriptor >= 0 else { return nil }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard connected == 0 else {
        close(descriptor)
        return nil
    }
    return descriptor
}

/// What the peer has sent within `wait` seconds: the bytes, `[]` when it closed, nil when it sent
/// nothing and is still open.
package func receiveAvailable(_ descriptor: Int32, wait: Double = 0) -> [UInt8]? {
    var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
    guard poll(&entry, 1, Int32(wait * 1000)) > 0 else { return nil }
    var chunk = [UInt8](repeating: 0, count: 65_536)
    let count = recv(descriptor, &chunk, chunk.count, Int32(MSG_DONTWAIT))
    return count <= 0 ? [] : Array(chunk[0..<count])
}

/// How a peer ended a connection, as its reader saw it.
package enum PeerEnd: Equatable, Sendable {
    /// An end of stream: the peer's FIN.
    case fin
    /// A reset (ECONNRESET): the peer said the stream was cut.
    case reset
    /// Another error, with its errno.
    case error(Int32)
    /// Nothing ended it within the wait.
    case stillOpen
}

/// Reads until the peer ends the connection, or `wait` seconds pass: what came, and how it ended.
package func receiveUntilEnd(_ descriptor: Int32, wait: Double) -> (bytes: [UInt8], end: PeerEnd) {
    let deadline = ContinuousClock.now.advanced(by: .milliseconds(Int(wait * 1000)))
    var received: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
        let left = ContinuousClock.now.duration(to: deadline)
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard left > .zero, poll(&entry, 1, Int32(left / .milliseconds(1))) > 0 else { return (received, .stillOpen) }
        let count = recv(descriptor, &chunk, chunk.count, Int32(MSG_DONTWAIT))
        if count > 0 {
            received += chunk[0..<count]
        } else if count == 0 {
            return (received, .fin)
        } else if errno != EAGAIN && errno != EINTR {
            return (received, errno == ECONNRESET ? .reset : .error(errno))
        }
    }
}

/// A TCP socket listening on 127.0.0.1 (a port the kernel picked) that never accepts: a server
/// that can only tell whether anyone connected to it. Closed when the value goes away.
package final class LoopbackListener {
    package let port: UInt16
    private let descriptor: Int32

    package init?() {
        guard let (descriptor, port) = bindLoopback(listening: 16) else { return nil }
        self.descriptor = descriptor
        self.port = port
    }

    deinit { close(descriptor) }

    /// Whether a connection is waiting to be accepted, or arrives within `wait` seconds.
    package func hasConnection(within wait: Double) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, Int32(wait * 1000)) > 0
    }
}

/// A TCP socket bound to 127.0.0.1 on a port the kernel picks, and listening with `backlog` unless
/// that is nil; nil when any step fails. The caller closes it.
package func bindLoopback(listening backlog: Int32?) -> (descriptor: Int32, port: UInt16)? {
    let descriptor = testSocket()
    guard descriptor >= 0 else { return nil }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ready = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(descriptor, $0, length) == 0 && (backlog.map { listen(descriptor, $0) == 0 } ?? true)
                && getsockname(descriptor, $0, &length) == 0
        }
    }
    guard ready else {
        close(descriptor)
        return nil
    }
    return (descriptor, UInt16(bigEndian: address.sin_port))
}
