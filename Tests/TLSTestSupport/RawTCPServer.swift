import Foundation
import Glibc

/// A TCP server on 127.0.0.1 that runs `handle` on a thread of its own for each connection it
/// accepts, with the connected socket (closed after `handle` returns): for tests that need an
/// upstream whose timing and flow they control exactly (one that goes silent, stops reading, or
/// streams more than anyone should buffer). Stops accepting when the value goes away.
package final class RawTCPServer: Sendable {
    package let port: UInt16
    private let listener: Int32

    package init(handle: @escaping @Sendable (Int32) -> Void) throws {
        guard let (descriptor, port) = bindLoopback(listening: 64) else {
            throw ProcessLaunch.Failure(message: "listening on 127.0.0.1: \(String(cString: strerror(errno)))")
        }
        listener = descriptor
        self.port = port
        Thread.detachNewThread {
            while true {
                let connection = accept(descriptor, nil, nil)
                if connection < 0 {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    return  // shutdown() in deinit: the listener is done.
                }
                Thread.detachNewThread {
                    handle(connection)
                    close(connection)
                }
            }
        }
    }

    deinit {
        // shutdown wakes the accept() blocked on another thread; only then is closing safe.
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }
}

/// Sends all of `bytes` (blocking); false when the peer went away first.
@discardableResult
package func sendAll(_ descriptor: Int32, _ bytes: some Collection<UInt8>) -> Bool {
    Array(bytes).withUnsafeBytes { buffer in
        var offset = 0
        while offset < buffer.count {
            let sent = send(descriptor, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
            if sent < 0, errno == EINTR { continue }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }
}

/// Reads until a blank line ends an HTTP head (at most 64 KiB, and within `wait` seconds): the head
/// as text, and the bytes that came after it. Nil when the peer closed or stalled, and at once when
/// its first byte is not a capital letter (a TLS ClientHello, say: no head is coming).
package func receiveHead(_ descriptor: Int32, wait: Double = 10) -> (head: String, rest: [UInt8])? {
    let terminator: [UInt8] = Array("\r\n\r\n".utf8)
    let deadline = Date().addingTimeInterval(wait)
    var received: [UInt8] = []
    while received.count < 65_536 {
        let left = deadline.timeIntervalSinceNow
        guard left > 0, let chunk = receiveAvailable(descriptor, wait: left), !chunk.isEmpty else { return nil }
        received += chunk
        guard (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(received[0]) else { return nil }
        if let end = received.firstRange(of: terminator) {
            return (String(decoding: received[..<end.lowerBound], as: UTF8.self), Array(received[end.upperBound...]))
        }
    }
    return nil
}

/// Waits up to `wait` seconds for the peer to close: true once recv() sees the end (any bytes still
/// arriving are read and dropped), false when the connection is still open at the end.
package func awaitPeerClose(_ descriptor: Int32, wait: Double) -> Bool {
    let deadline = Date().addingTimeInterval(wait)
    while true {
        let left = deadline.timeIntervalSinceNow
        guard left > 0 else { return false }
        guard let chunk = receiveAvailable(descriptor, wait: left) else { return false }
        if chunk.isEmpty { return true }
    }
}
