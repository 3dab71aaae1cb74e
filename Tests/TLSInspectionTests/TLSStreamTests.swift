import ATSPolicy
import TLSInspection
import Testing

/// ``TLSStream`` over a fake transport: what the peer "sends" is scripted, so each way a
/// handshake can go wrong is checked without a socket. The real handshakes (real servers that
/// drip, stall, reset, refuse or send a 100 KiB chain) are in ProxyCoreTests' HostileUpstreamTests.
@Suite("TLS stream over a scripted transport")
struct TLSStreamTests {
    /// A transport whose incoming bytes are queued by the test; what the stream sends is kept.
    final class ScriptedTransport: CiphertextTransport {
        var incoming: [UInt8] = []
        var ended = false
        var queued: [UInt8] = []
        var sent: [UInt8] = []
        var flushes = 0

        func receiveCiphertext(into buffer: UnsafeMutableRawBufferPointer) -> CiphertextRead {
            guard !incoming.isEmpty else { return ended ? .ended : .nothingYet }
            let count = min(buffer.count, incoming.count)
            buffer.copyBytes(from: incoming[..<count])
            incoming.removeFirst(count)
            return .bytes(count)
        }

        func queueCiphertext(_ bytes: UnsafeRawBufferPointer) { queued += bytes }

        func flushCiphertext() {
            flushes += 1
            sent += queued
            queued = []
        }
    }

    static func stream(serverName: String? = "example.com") throws -> (TLSStream, ScriptedTransport) {
        let requirements = try PolicyLoader.load(
            bytes: Array("<plist version=\"1.0\"><dict/></plist>".utf8), file: "t.plist"
        )
        .requirements(forHost: "example.com")
        let context = try TLSClientContext(
            profile: .ats(for: requirements), anchors: TrustAnchors.loading(caFiles: [], systemRoots: false))
        let transport = ScriptedTransport()
        return (try TLSStream(role: .client(serverName: serverName), context: context, transport: transport), transport)
    }

    @Test("the first call sends a ClientHello naming the server, flushed, and then waits for bytes")
    func clientHello() throws {
        let (stream, transport) = try Self.stream()
        #expect(try stream.handshake() == .needsBytes)
        #expect(transport.queued.isEmpty, "written but not flushed")
        #expect(transport.sent.starts(with: [0x16, 0x03]), "a handshake record: \(transport.sent.prefix(5))")
        #expect(transport.sent.count > 5 && transport.sent[5] == 0x01, "a ClientHello")
        #expect(transport.sent.firstRange(of: Array("example.com".utf8)) != nil, "the SNI")
        #expect(try stream.handshake() == .needsBytes, "nothing new: still waiting")
        #expect(!stream.isHandshakeComplete)
    }

    /// The extensions of the ClientHello in `bytes` (one record), by type.
    static func extensions(ofHello bytes: [UInt8]) -> [UInt16: [UInt8]] {
        var at = 5 + 4 + 2 + 32
        func u16(_ index: Int) -> Int { Int(bytes[index]) << 8 | Int(bytes[index + 1]) }
        at += 1 + Int(bytes[at])  // session id
        at += 2 + u16(at)  // cipher suites
        at += 1 + Int(bytes[at])  // compression methods
        let end = at + 2 + u16(at)
        at += 2
        var found: [UInt16: [UInt8]] = [:]
        while at + 4 <= end {
            let type = UInt16(u16(at))
            let length = u16(at + 2)
            found[type] = Array(bytes[(at + 4)..<(at + 4 + length)])
            at += 4 + length
        }
        return found
    }

    @Test("the ATS-shaped ClientHello offers signature algorithms in an iPhone's order")
    func signatureAlgorithms() throws {
        let (stream, transport) = try Self.stream()
        _ = try stream.handshake()
        let list = try #require(Self.extensions(ofHello: transport.sent)[0x000d], "no signature_algorithms extension")
        let schemes = stride(from: 2, to: list.count - 1, by: 2).map { UInt16(list[$0]) << 8 | UInt16(list[$0 + 1]) }
        #expect(schemes == [0x0403, 0x0804, 0x0401, 0x0503, 0x0203, 0x0805, 0x0501, 0x0806, 0x0601, 0x0201])
    }

    @Test("no server name: no SNI extension, as Apple's client sends none for an IP literal")
    func noServerName() throws {
        let (stream, transport) = try Self.stream(serverName: nil)
        _ = try stream.handshake()
        // server_name is extension 0x0000 with a host_name list: no name bytes at all here.
        #expect(transport.sent.firstRange(of: Array("example.com".utf8)) == nil)
    }

    /// How the peer answers the ClientHello, and the failure that must come of it.
    static let answers: [(name: String, bytes: [UInt8], ends: Bool, kind: TLSStreamError.Kind, words: String)] = [
        ("an HTTP response", Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8), false, .notTLS, "wrong version number"),
        ("an SSH banner", Array("SSH-2.0-OpenSSH_9.2\r\n".utf8), false, .notTLS, ""),
        ("a close with no alert", [], true, .peerClosed, ""),
        ("half a record, then a close", [0x16, 0x03, 0x03, 0x00, 0x40, 0x02], true, .peerClosed, ""),
        (
            "a fatal handshake_failure alert", [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28], false, .refused,
            "handshake failure"
        ),
        (
            "a fatal protocol_version alert", [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46], false, .refused,
            "protocol version"
        ),
        ("a ServerHello that is garbage", [0x16, 0x03, 0x03, 0x00, 0x04, 0x02, 0x00, 0x00, 0x00], false, .refused, ""),
    ]

    @Test("each way a server can answer badly is a typed failure in OpenSSL's words", arguments: 0..<answers.count)
    func failures(_ index: Int) throws {
        let answer = Self.answers[index]
        let (stream, transport) = try Self.stream()
        #expect(try stream.handshake() == .needsBytes)
        transport.incoming = answer.bytes
        transport.ended = answer.ends
        let error = #expect(throws: TLSStreamError.self, "\(answer.name)") { try stream.handshake() }
        #expect(error?.kind == answer.kind, "\(answer.name): \(String(describing: error))")
        if !answer.words.isEmpty {
            #expect(error?.reason.contains(answer.words) == true, "\(answer.name): \(String(describing: error))")
        }
        // After a fatal error the stream refuses to go on, and sends no close_notify.
        let sentBefore = transport.sent.count
        stream.shutdown()
        #expect(transport.sent.count == sentBefore)
        #expect(throws: TLSStreamError.self) { try stream.handshake() }
    }

    @Test("a record split into single bytes is waited for, byte by byte, without failing early")
    func dribble() throws {
        let (stream, transport) = try Self.stream()
        _ = try stream.handshake()
        // A fatal alert, one byte per event: only the last byte completes it.
        let alert: [UInt8] = [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28]
        for byte in alert.dropLast() {
            transport.incoming = [byte]
            #expect(try stream.handshake() == .needsBytes)
        }
        transport.incoming = [alert.last!]
        #expect(throws: TLSStreamError.self) { try stream.handshake() }
    }

    @Test("reading or writing before the handshake completes is refused, not attempted")
    func outOfOrder() throws {
        let (stream, _) = try Self.stream()
        var buffer = [UInt8](repeating: 0, count: 16)
        let read = try buffer.withUnsafeMutableBytes { try stream.read(into: $0) }
        #expect(read == .needsBytes)
        #expect(throws: TLSStreamError.self) {
            try [UInt8](repeating: 1, count: 4).withUnsafeBytes { try stream.write($0) }
        }
    }
}
