import Foundation
import Glibc

/// A TLS server in front of a real one that reads the ClientHello as the servers and middleboxes that
/// fail iOS 26 devices do: with one read(2) of at most one TCP segment's worth (1,460 bytes, the MSS of
/// an Ethernet path). When that read holds the whole hello it hands the bytes on to `backend` and
/// relays both ways, so a small hello gets a real handshake; when it does not (iOS 26's hello, about
/// 1.6 KB, spans two segments) it closes the connection with no alert, as they do, or resets it, as
/// the middleboxes among them that cut what they cannot parse do (`resets`).
///
/// On loopback a segment can hold 64 KiB, so the limit is the read's size, not the network's.
package final class OneSegmentHelloServer {
    /// One TCP segment's payload on an Ethernet path: 1,500 bytes of MTU less 40 of IPv4 and TCP headers.
    package static let segment = 1_460

    package let port: UInt16
    private let listener: RawTCPServer
    private let tally: Tally

    /// - Parameters:
    ///   - backend: the real TLS server the hello is handed on to (kept alive by the caller).
    ///   - resets: a hello that does not fit is answered with a TCP reset rather than a close.
    package init(backend: UInt16, resets: Bool = false) throws {
        let tally = Tally()
        self.tally = tally
        listener = try RawTCPServer { client in
            var buffer = [UInt8](repeating: 0, count: Self.segment)
            let count = read(client, &buffer, Self.segment)
            guard count > 0 else { return }
            let first = Array(buffer[..<count])
            guard Self.holdsWholeHello(first) else {
                tally.note(rejected: true)
                if resets {
                    // SO_LINGER with no time: close(2) sends a RST (the caller closes after we return).
                    var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
                    setsockopt(client, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
                    return
                }
                // A close with no alert. The bytes after the first read are drained only so that the
                // close is a FIN, not the RST that closing with unread bytes sends.
                shutdown(client, Int32(SHUT_WR))
                _ = awaitPeerClose(client, wait: 10)
                return
            }
            tally.note(rejected: false)
            guard let upstream = connectLoopback(port: backend) else { return }
            defer { close(upstream) }
            guard sendAll(upstream, first) else { return }
            relay(client, upstream)
        }
        port = listener.port
    }

    /// Connections closed because their first read held no whole ClientHello, and those handed on.
    package var rejected: Int { tally.counts.rejected }
    package var handedOn: Int { tally.counts.handedOn }

    /// Whether `bytes` begin with a handshake record that holds a whole ClientHello: the record's
    /// 5-byte header and the length it declares, and in it the hello's 4-byte header and its length.
    package static func holdsWholeHello(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 9, bytes[0] == 22, bytes[5] == 1 else { return false }
        let record = Int(bytes[3]) << 8 | Int(bytes[4])
        let hello = Int(bytes[6]) << 16 | Int(bytes[7]) << 8 | Int(bytes[8])
        return 5 + record <= bytes.count && 4 + hello <= record
    }

    private final class Tally: @unchecked Sendable {
        private let lock = NSLock()
        private var rejected = 0
        private var handedOn = 0

        func note(rejected wasRejected: Bool) {
            lock.withLock { if wasRejected { rejected += 1 } else { handedOn += 1 } }
        }

        var counts: (rejected: Int, handedOn: Int) { lock.withLock { (rejected, handedOn) } }
    }
}

/// Copies bytes both ways between two connected sockets until either side closes (at most 30 s).
private func relay(_ one: Int32, _ other: Int32) {
    var entries = [
        pollfd(fd: one, events: Int16(POLLIN), revents: 0), pollfd(fd: other, events: Int16(POLLIN), revents: 0),
    ]
    var buffer = [UInt8](repeating: 0, count: 16_384)
    let deadline = Date().addingTimeInterval(30)
    while deadline.timeIntervalSinceNow > 0 {
        guard poll(&entries, 2, 1000) >= 0 else { return }
        for (index, entry) in entries.enumerated() where entry.revents != 0 {
            let count = read(entry.fd, &buffer, buffer.count)
            guard count > 0, sendAll(entries[1 - index].fd, buffer[..<count]) else { return }
        }
    }
}
