import ATSPolicy
import TLSInspection
import TLSTestSupport
import Testing

/// Plaintext and endings between a client ``TLSStream`` and a server one over in-memory queues:
/// byte-exact both ways, bounded reads, close_notify told from a truncation, writes after a close.
@Suite("TLS streams back to back: plaintext and endings", .startsProcesses(timeLimit: .seconds(60)))
struct TLSStreamDataTests {
    /// A pair with both handshakes complete, at `version`.
    static func openPair(_ version: TLSVersion = .tls13) throws -> StreamPair {
        let fixture = try StreamFixture.shared.get()
        let pair = try StreamPair(
            client: fixture.clientContext { $0.maximumVersion = version },
            server: TLSServerContext(credentials: fixture.ecdsaLeaf))
        let result = pair.handshake()
        try #require(result == (.complete, .complete), "\(result)")
        return pair
    }

    enum Direction: String, CaseIterable, Sendable { case clientToServer, serverToClient }

    @Test(
        "1 MiB each way, written in uneven pieces and read as it arrives, arrives byte-exact",
        arguments: [TLSVersion.tls13, .tls12], Direction.allCases)
    func megabyte(_ version: TLSVersion, _ direction: Direction) throws {
        let pair = try Self.openPair(version)
        let (sender, receiver) = direction == .clientToServer ? (pair.client, pair.server) : (pair.server, pair.client)
        let pattern = BytePattern()
        let total = 1 << 20
        var written = 0
        var received = 0
        var mismatches = 0
        while written < total {
            // 100,003 bytes: no record or buffer boundary lines up with a piece.
            let piece = min(100_003, total - written)
            try sender.write(pattern.bytes(at: written, count: piece))
            written += piece
            let (bytes, last) = try receiver.readAvailable(bufferSize: 7_919)
            #expect(last == .needsBytes)
            if !bytes.withUnsafeBytes({ pattern.matches($0, at: received) }) { mismatches += 1 }
            received += bytes.count
        }
        #expect(received == total)
        #expect(mismatches == 0)
    }

    @Test("a read returns at most what fits in the buffer, and the rest on the next calls")
    func boundedReads() throws {
        let pair = try Self.openPair()
        let message = (0..<1000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        try pair.server.write(message)
        var buffer = [UInt8](repeating: 0, count: 300)
        var received: [UInt8] = []
        var reads: [TLSStream.PlaintextRead] = []
        while true {
            let read = try buffer.withUnsafeMutableBytes { try pair.client.read(into: $0) }
            reads.append(read)
            guard case .bytes(let count) = read else { break }
            received += buffer[..<count]
        }
        #expect(reads == [.bytes(300), .bytes(300), .bytes(300), .bytes(100), .needsBytes])
        #expect(received == message)
        // Both ways at once: each side's bytes come out whole on the other.
        try pair.client.write(Array("ping".utf8))
        try pair.server.write(Array("pong".utf8))
        #expect(try pair.server.readAvailable().bytes == Array("ping".utf8))
        #expect(try pair.client.readAvailable().bytes == Array("pong".utf8))
    }

    /// Who ends the session, and how.
    struct Ending: Sendable, CustomTestStringConvertible {
        var name: String
        var byClient: Bool
        var closeNotify: Bool
        var version: TLSVersion
        var testDescription: String { name }
    }

    static let endings: [Ending] = [
        Ending(name: "the client sends close_notify (TLS 1.3)", byClient: true, closeNotify: true, version: .tls13),
        Ending(name: "the server sends close_notify (TLS 1.3)", byClient: false, closeNotify: true, version: .tls13),
        Ending(name: "the client sends close_notify (TLS 1.2)", byClient: true, closeNotify: true, version: .tls12),
        Ending(
            name: "the client's connection ends with no close_notify", byClient: true, closeNotify: false,
            version: .tls13),
        Ending(
            name: "the server's connection ends with no close_notify", byClient: false, closeNotify: false,
            version: .tls13),
        Ending(
            name: "the server's connection ends with no close_notify (TLS 1.2)", byClient: false, closeNotify: false,
            version: .tls12),
    ]

    @Test(
        "the other side reads what came before the end, then a clean end after close_notify, a truncation without",
        arguments: endings)
    func ending(_ row: Ending) throws {
        let pair = try Self.openPair(row.version)
        let (closer, other) = row.byClient ? (pair.client, pair.server) : (pair.server, pair.client)
        let closerWire = row.byClient ? pair.wire.client : pair.wire.server
        try closer.write(Array("last words".utf8))
        if row.closeNotify { closer.shutdown() }
        closerWire.close()
        let (bytes, last) = try other.readAvailable()
        #expect(bytes == Array("last words".utf8))
        #expect(last == .ended(clean: row.closeNotify))
        #expect(try other.readAvailable().last == .ended(clean: row.closeNotify), "the end is told again")
        if row.closeNotify {
            // The closer may write no more once it sent close_notify.
            let refused = #expect(throws: TLSStreamError.self) { try closer.write(Array("more".utf8)) }
            #expect(refused?.kind == .internalError)
        } else {
            // A truncation is fatal: the other side may neither write nor send close_notify.
            let sent = (row.byClient ? pair.wire.server : pair.wire.client).sent
            #expect(throws: TLSStreamError.self) { try other.write(Array("more".utf8)) }
            other.shutdown()
            #expect((row.byClient ? pair.wire.server : pair.wire.client).sent == sent)
        }
    }

    @Test(
        "a half-close: after the client's close_notify the server still answers, then closes, and the client reads both",
        arguments: [TLSVersion.tls13, .tls12])
    func halfClose(_ version: TLSVersion) throws {
        let pair = try Self.openPair(version)
        pair.client.shutdown()
        let sent = pair.wire.client.sent.count
        pair.client.shutdown()
        #expect(pair.wire.client.sent.count == sent, "close_notify is sent once")
        #expect(try pair.server.readAvailable().last == .ended(clean: true))
        try pair.server.write(Array("the answer".utf8))
        pair.server.shutdown()
        let (bytes, last) = try pair.client.readAvailable()
        #expect(bytes == Array("the answer".utf8))
        #expect(last == .ended(clean: true))
        #expect(throws: TLSStreamError.self) { try pair.server.write(Array("late".utf8)) }
    }

    @Test("a connection that ends mid-handshake is the peer's close, told from each side", arguments: [true, false])
    func endMidHandshake(clientCloses: Bool) throws {
        let fixture = try StreamFixture.shared.get()
        let pair = try StreamPair(
            client: fixture.clientContext(), server: TLSServerContext(credentials: fixture.ecdsaLeaf))
        #expect(try pair.client.handshake() == .needsBytes)
        if clientCloses {
            pair.wire.client.close()
            // The server reads the whole ClientHello, answers, then meets the end.
            let error = #expect(throws: TLSStreamError.self) {
                for _ in 0..<3 { _ = try pair.server.handshake() }
            }
            #expect(error?.kind == .peerClosed, "\(String(describing: error))")
        } else {
            pair.wire.server.close()
            let error = #expect(throws: TLSStreamError.self) { try pair.client.handshake() }
            #expect(error?.kind == .peerClosed, "\(String(describing: error))")
            #expect(error?.reason == "the server closed the connection", "\(String(describing: error))")
        }
    }
}
