import ProxyWire
import Testing

/// The SSL 2.0-format ClientHello of RFC 5246 Appendix E.2.
@Suite("SSLv2-compatible ClientHello")
struct TLSSSLv2HelloTests {
    /// A 2-byte-header SSLv2 record holding a CLIENT-HELLO.
    static func hello(
        version: UInt16 = 0x0301,
        cipherSpecs: [UInt32] = [0x01_0080, 0x00_002F, 0x00_000A, 0x07_00C0, 0x00_00FF],
        sessionID: [UInt8] = [],
        challenge: [UInt8] = [UInt8](repeating: 0xCC, count: 32),
        cipherSpecLength: Int? = nil,
        messageType: UInt8 = 1
    ) -> [UInt8] {
        let specs = cipherSpecs.flatMap { [UInt8($0 >> 16), UInt8($0 >> 8 & 0xFF), UInt8($0 & 0xFF)] }
        let message =
            [messageType] + Wire.uint16(version)
            + Wire.lengthPrefix(cipherSpecLength ?? specs.count, 2)
            + Wire.lengthPrefix(sessionID.count, 2) + Wire.lengthPrefix(challenge.count, 2)
            + specs + sessionID + challenge
        return [0x80 | UInt8(message.count >> 8), UInt8(message.count & 0xFF)] + message
    }

    @Test("the TLS cipher suites and version are reported; SSL 2.0 ciphers are dropped")
    func decodes() throws {
        let bytes = Self.hello()
        let expected = ClientHello(
            legacyVersion: 0x0301, cipherSuites: [0x002F, 0x000A, 0x00FF], isSSLv2Compatible: true)
        #expect(Scan.whole(bytes, .clientToServer) == .clientHello(expected))
        #expect(Scan.byteAtATime(bytes, .clientToServer) == .clientHello(expected))
        #expect(expected.highestVersion == 0x0301)
    }

    @Test(
        "an SSL 2.0 client's own hello (version 0x0002) and a session id", arguments: [UInt16(0x0002), 0x0300, 0x0303])
    func versions(version: UInt16) throws {
        let bytes = Self.hello(
            version: version, sessionID: [UInt8](repeating: 1, count: 16), challenge: [UInt8](repeating: 2, count: 16))
        let hello = try #require(Scan.whole(bytes, .clientToServer).clientHello)
        #expect(hello.legacyVersion == version)
        #expect(hello.isSSLv2Compatible)
    }

    @Test(
        "malformed SSLv2 hellos fail with the field named",
        arguments: [
            (hello(cipherSpecs: []), "cipher_spec_length 0 is not a positive multiple of 3"),
            (
                hello(cipherSpecs: [0x2F, 0x0A], cipherSpecLength: 5),
                "cipher_spec_length 5 is not a positive multiple of 3"
            ),
            (hello(challenge: [UInt8](repeating: 0, count: 8)), "challenge_length 8 is outside 16...32"),
            (hello(sessionID: [UInt8](repeating: 0, count: 33)), "session_id_length 33 exceeds 32"),
            (
                hello(cipherSpecLength: 3),
                "cipher_spec_length 3 + session_id_length 0 + challenge_length 32 does not match the 47 bytes that follow"
            ),
        ])
    func malformed(bytes: [UInt8], reason: String) {
        #expect(
            Scan.whole(bytes, .clientToServer) == .failed(reason: "malformed SSLv2-compatible ClientHello: " + reason))
    }

    @Test("a high-bit start that is not a CLIENT-HELLO is not TLS")
    func notAHello() {
        #expect(
            Scan.whole(Self.hello(messageType: 4), .clientToServer).notTLSReason?
                .hasSuffix("are not an SSLv2-compatible ClientHello (msg_type 4, not 1)") == true)
        #expect(
            Scan.whole(Self.hello(version: 0x0400), .clientToServer)
                == .notTLS(reason: "an SSLv2-format ClientHello's version major 4 is neither 0x00 nor 0x03"))
        #expect(
            Scan.whole(Self.hello(version: 0x0305), .clientToServer)
                == .notTLS(reason: "an SSLv2-format ClientHello's version 0x0305 is not SSL or TLS"))
    }

    @Test("a message shorter than its fixed fields, or over the limit, fails")
    func lengths() {
        #expect(
            Scan.whole([0x80, 0x05, 0x01, 0x03, 0x01], .clientToServer)
                == .failed(reason: "SSLv2-compatible ClientHello length 5 is shorter than its fixed fields (9)"))
        var scanner = TLSHelloScanner(direction: .clientToServer, maximumBufferedBytes: 40)
        #expect(
            scanner.feed(Self.hello())
                == .failed(
                    reason: "the SSLv2-compatible ClientHello declares 56 bytes, more than the 40-byte buffering limit")
        )
    }
}
