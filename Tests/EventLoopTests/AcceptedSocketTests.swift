import EventLoop
import Glibc
import Testing

/// An accepted socket handed between loops is closed exactly once: by whoever takes it, or by the
/// socket itself when nobody did.
@Suite("Accepted sockets on their way to another loop")
struct AcceptedSocketTests {
    private func socketPair() throws -> (Int32, Int32) {
        var ends: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0)
        return (ends[0], ends[1])
    }

    /// Whether the peer of `descriptor` has gone (a read sees end of stream at once).
    private func peerClosed(_ descriptor: Int32) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 1000) > 0 else { return false }
        var byte: UInt8 = 0
        return recv(descriptor, &byte, 1, Int32(MSG_DONTWAIT)) == 0
    }

    @Test("a socket nobody took is closed when it goes")
    func untakenIsClosed() throws {
        let (handed, peer) = try socketPair()
        defer { close(peer) }
        do { _ = AcceptedSocket(handed) }
        #expect(peerClosed(peer))
    }

    @Test("a taken socket is the taker's: given once, left open")
    func takenIsLeftOpen() throws {
        let (handed, peer) = try socketPair()
        defer { close(peer) }
        var taken: Int32?
        do {
            let socket = AcceptedSocket(handed)
            taken = socket.take()
            #expect(socket.take() == nil)
        }
        #expect(taken == handed)
        #expect(!peerClosed(peer))
        if let taken { close(taken) }
        #expect(peerClosed(peer))
    }
}
