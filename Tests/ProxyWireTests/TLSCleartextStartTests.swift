import ProxyWire
import Testing

/// Streams whose first bytes are not a TLS handshake record: the proxy relays them as cleartext.
@Suite("Streams that are not TLS")
struct TLSCleartextStartTests {
    @Test(
        "cleartext protocols are told apart by their first byte",
        arguments: [
            (
                "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n",
                "the first byte 0x47 ('G') is not a TLS record content type (22, handshake)"
            ),
            (
                "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n",
                "the first byte 0x53 ('S') is not a TLS record content type (22, handshake)"
            ),
            (
                "220 mail.example.com ESMTP Postfix\r\n",
                "the first byte 0x32 ('2') is not a TLS record content type (22, handshake)"
            ),
            (
                "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
                "the first byte 0x50 ('P') is not a TLS record content type (22, handshake)"
            ),
        ])
    func cleartextProtocols(text: String, reason: String) {
        let bytes = Array(text.utf8)
        for direction in [TLSHelloScanner.Direction.clientToServer, .serverToClient] {
            #expect(Scan.whole(bytes, direction) == .notTLS(reason: reason))
            // Decided on the first byte, so chunking cannot change the reason.
            #expect(Scan.byteAtATime(bytes, direction) == .notTLS(reason: reason))
        }
    }

    @Test(
        "a handshake type byte followed by something that is not a TLS version",
        arguments: [
            ([UInt8]([0x16, 0x48, 0x54]), "the first record's 0x48 ('H') is not a TLS major version (3)"),
            ([0x16, 0xFE, 0xFD, 0, 0], "the first record's 0xfe is not a TLS major version (3)"),  // DTLS 1.2
            ([0x16, 0x03, 0x05, 0, 1], "the first record's legacy_record_version 3.5 is newer than TLS 1.3 (3.4)"),
            ([0x17, 0x02], "the first record's 0x02 is not a TLS major version (3)"),
        ])
    func notAVersion(bytes: [UInt8], reason: String) {
        #expect(Scan.whole(bytes, .clientToServer) == .notTLS(reason: reason))
        #expect(Scan.byteAtATime(bytes, .serverToClient) == .notTLS(reason: reason))
    }

    @Test("empty input decides nothing; an empty stream is not TLS")
    func empty() {
        var scanner = TLSHelloScanner(direction: .clientToServer)
        #expect(scanner.feed([UInt8]()) == .needMoreData)
        #expect(scanner.feed(EmptyCollection<UInt8>()) == .needMoreData)
        #expect(scanner.finish() == .notTLS(reason: "the stream ended before any bytes arrived"))
        #expect(
            scanner.feed(ClientHelloBuilder().record) == .notTLS(reason: "the stream ended before any bytes arrived"))
    }

    @Test(
        "a prefix that could still be TLS waits",
        arguments: [[UInt8]([0x16]), [0x16, 3], [0x16, 3, 1], [0x16, 3, 1, 0]])
    func ambiguousPrefix(bytes: [UInt8]) {
        #expect(Scan.whole(bytes, .clientToServer) == .needMoreData)
    }

    @Test("a high-bit first byte is an SSLv2 hello only from the client")
    func highBitFromServer() {
        let bytes: [UInt8] = [0x80, 0x2E, 0x01, 0x03, 0x01]
        #expect(
            Scan.whole(bytes, .serverToClient)
                == .notTLS(reason: "the first byte 0x80 is not a TLS record content type (22, handshake)"))
    }
}
