import ProxyWire
import Testing

/// The record layer: reassembling handshake messages across records (RFC 8446 §5.1), alerts,
/// change_cipher_spec, content types, versions and length limits.
@Suite("TLS record layer")
struct TLSRecordLayerTests {
    @Test("a ClientHello split across two records is reassembled", arguments: [1, 4, 5, 100, 200])
    func clientHelloAcrossTwoRecords(splitAt offset: Int) throws {
        let message = try TLSCaptures.firstHandshakeMessage("tls13-client")
        let expected = Scan.whole(try TLSCaptures.bytes("tls13-client"), .clientToServer)
        try #require(expected.clientHello != nil)
        let split = Wire.records(splitting: message, at: [offset], version: 0x0301)
        #expect(Scan.whole(split, .clientToServer) == expected)
    }

    @Test("a ClientHello spread over many records, one byte each")
    func clientHelloInOneByteRecords() throws {
        let message = try TLSCaptures.firstHandshakeMessage("tls12-ecdhe-client")
        let split = Wire.records(splitting: message, at: Array(1..<message.count))
        let expected = Scan.whole(try TLSCaptures.bytes("tls12-ecdhe-client"), .clientToServer)
        #expect(Scan.whole(split, .clientToServer) == expected)
    }

    @Test("a ClientHello of almost 64 KiB spans four full records and still fits")
    func largeClientHello() throws {
        var builder = ClientHelloBuilder()
        // padding extension (21, RFC 7685) to push the message just under the 64 KiB limit.
        let fixedSize = builder.message.count + 4
        builder.extensions?.append(Wire.ext(21, [UInt8](repeating: 0, count: 65_536 - fixedSize)))
        let message = builder.message
        #expect(message.count == 65_536)
        let records = Wire.records(splitting: message, at: [16_384, 32_768, 49_152])
        let hello = try #require(Scan.whole(records, .clientToServer).clientHello)
        #expect(hello.extensionTypes == [0, 43, 21])
    }

    @Test("two handshake messages in one record: the ServerHello is read, the Certificate ignored")
    func twoMessagesInOneRecord() throws {
        let capture = try TLSCaptures.bytes("tls12-ecdhe-server")
        let expected = Scan.whole(capture, .serverToClient)
        try #require(expected.serverHello != nil)
        let serverHello = try TLSCaptures.firstHandshakeMessage("tls12-ecdhe-server")
        let secondRecord = Array(capture.dropFirst(5 + serverHello.count))
        let certificate = Array(secondRecord[5..<(5 + (Int(secondRecord[3]) << 8 | Int(secondRecord[4])))])
        #expect(certificate[0] == 11)
        #expect(Scan.whole(Wire.record(serverHello + certificate), .serverToClient) == expected)
    }

    @Test("a HelloRetryRequest and the ServerHello after it in one record")
    func helloRetryRequestAndServerHelloInOneRecord() throws {
        let record = Wire.record(ServerHelloBuilder.helloRetryRequest.message + ServerHelloBuilder().message)
        let hello = try #require(Scan.whole(record, .serverToClient).serverHello)
        #expect(hello.helloRetryRequested)
        #expect(!hello.isHelloRetryRequest)
    }

    @Test("after a HelloRetryRequest the scanner waits for the ServerHello")
    func waitsAfterHelloRetryRequest() {
        var scanner = TLSHelloScanner(direction: .serverToClient)
        #expect(scanner.feed(ServerHelloBuilder.helloRetryRequest.record) == .needMoreData)
        #expect(scanner.feed(Wire.record(type: 20, [1])) == .needMoreData)
        let hello = scanner.feed(ServerHelloBuilder().record).serverHello
        #expect(hello?.helloRetryRequested == true)
    }

    @Test("a second HelloRetryRequest fails (RFC 8446 §4.1.4)")
    func secondHelloRetryRequest() {
        let bytes = ServerHelloBuilder.helloRetryRequest.record + ServerHelloBuilder.helloRetryRequest.record
        #expect(Scan.whole(bytes, .serverToClient).failureReason?.contains("second HelloRetryRequest") == true)
    }

    @Test(
        "an alert instead of a hello is named",
        arguments: [
            (UInt8(40), "fatal handshake_failure"), (70, "fatal protocol_version"),
            (71, "fatal insufficient_security"), (80, "fatal internal_error"),
            (112, "fatal unrecognized_name"), (120, "fatal no_application_protocol"),
            (201, "fatal unknown alert 201"),
        ])
    func alert(description: UInt8, name: String) {
        let alert = Wire.record(type: 21, [2, description])
        #expect(Scan.whole(alert, .serverToClient) == .failed(reason: "the server sent a TLS alert: \(name)"))
        #expect(Scan.whole(alert, .clientToServer) == .failed(reason: "the client sent a TLS alert: \(name)"))
    }

    @Test("a warning alert and an unknown level are named too")
    func alertLevels() {
        #expect(
            Scan.whole(Wire.record(type: 21, [1, 112]), .serverToClient)
                == .failed(reason: "the server sent a TLS alert: warning unrecognized_name"))
        #expect(
            Scan.whole(Wire.record(type: 21, [9, 0]), .serverToClient)
                == .failed(reason: "the server sent a TLS alert: level 9 close_notify"))
    }

    @Test("an alert record that is not two bytes long fails")
    func alertOfWrongLength() {
        #expect(
            Scan.whole(Wire.record(type: 21, [2, 40, 0]), .serverToClient)
                == .failed(reason: "alert record length 3 is not 2"))
    }

    @Test("an alert after a HelloRetryRequest is reported")
    func alertAfterHelloRetryRequest() {
        let bytes = ServerHelloBuilder.helloRetryRequest.record + Wire.record(type: 21, [2, 47])
        #expect(
            Scan.whole(bytes, .serverToClient)
                == .failed(reason: "the server sent a TLS alert: fatal illegal_parameter"))
    }

    @Test("a record over 2^14 bytes fails; 2^14 exactly is fine")
    func oversizedRecord() {
        #expect(
            Scan.whole([22, 3, 1, 0x40, 0x01], .clientToServer)
                == .failed(
                    reason:
                        "handshake record length 16385 exceeds 16384, the most a plaintext record may carry (RFC 8446 §5.1)"
                ))
        #expect(Scan.whole([22, 3, 1, 0x40, 0x00], .clientToServer) == .needMoreData)
    }

    @Test("an empty handshake record fails")
    func emptyHandshakeRecord() {
        #expect(
            Scan.whole([22, 3, 3, 0, 0], .serverToClient)
                == .failed(reason: "a handshake record is empty, which RFC 8446 §5.1 forbids"))
    }

    @Test("a hello declaring more than the buffering limit fails as soon as its header is in")
    func helloOverTheLimit() {
        // 140000-byte ClientHello: only the record and handshake headers are needed to refuse it.
        let bytes: [UInt8] = [22, 3, 1, 0x40, 0x00, 1, 0x02, 0x22, 0xE0]
        #expect(
            Scan.whole(bytes, .clientToServer)
                == .failed(
                    reason: "the ClientHello declares 140000 bytes, more than the 131400-byte buffering limit allows"))
    }

    @Test("a smaller buffering limit applies to real hellos")
    func customLimit() throws {
        let capture = try TLSCaptures.bytes("tls13-client")
        let messageSize = try TLSCaptures.firstHandshakeMessage("tls13-client").count
        #expect(
            Scan.whole(capture, .clientToServer, limit: 300)
                == .failed(
                    reason:
                        "the ClientHello declares \(messageSize - 4) bytes, more than the 300-byte buffering limit allows"
                ))
        // The limit counts the 4-byte handshake header too.
        #expect(Scan.whole(capture, .clientToServer, limit: messageSize).clientHello != nil)
        #expect(Scan.whole(capture, .clientToServer, limit: messageSize - 1).failureReason != nil)
        #expect(Scan.whole(capture, .clientToServer, limit: -5).failureReason != nil)
    }

    @Test("a change_cipher_spec record before the hello fails")
    func changeCipherSpecFirst() {
        #expect(
            Scan.whole(Wire.record(type: 20, [1]), .serverToClient)
                == .failed(
                    reason: "a change_cipher_spec record (content type 20) arrived before the ServerHello"))
        #expect(
            Scan.whole(Wire.record(type: 20, [1]) + ClientHelloBuilder().record, .clientToServer)
                == .failed(reason: "a change_cipher_spec record (content type 20) arrived before the ClientHello"))
    }

    @Test("application data before the hello fails")
    func applicationDataFirst() {
        #expect(
            Scan.whole(Wire.record(type: 23, [1, 2, 3]), .clientToServer)
                == .failed(
                    reason: "an application_data record (content type 23) arrived before the ClientHello"))
    }

    @Test("change_cipher_spec after a HelloRetryRequest must be one byte of value 1")
    func malformedChangeCipherSpec() {
        let hrr = ServerHelloBuilder.helloRetryRequest.record
        #expect(
            Scan.whole(hrr + Wire.record(type: 20, [1, 1]), .serverToClient)
                == .failed(reason: "change_cipher_spec record length 2 is not 1"))
        #expect(
            Scan.whole(hrr + Wire.record(type: 20, [7]), .serverToClient)
                == .failed(reason: "a change_cipher_spec record holds 0x07, not 0x01"))
    }

    @Test("change_cipher_spec inside a split handshake message fails (RFC 8446 §5.1)")
    func interleavedChangeCipherSpec() {
        let message = ServerHelloBuilder().message
        let bytes =
            ServerHelloBuilder.helloRetryRequest.record
            + Wire.record(Array(message[..<10])) + Wire.record(type: 20, [1]) + Wire.record(Array(message[10...]))
        #expect(
            Scan.whole(bytes, .serverToClient)
                == .failed(
                    reason: "a change_cipher_spec record interrupted a handshake message (RFC 8446 §5.1)"))
    }

    @Test("a later record with a bad type or version fails rather than being called cleartext")
    func badLaterRecord() {
        let message = ClientHelloBuilder().message
        let firstPart = Wire.record(Array(message[..<20]))
        #expect(
            Scan.whole(firstPart + [0x47, 0x45, 0x54], .clientToServer)
                == .failed(reason: "a record's first byte 0x47 ('G') is not a TLS record content type"))
        #expect(
            Scan.whole(firstPart + [22, 3, 9], .clientToServer)
                == .failed(reason: "a record's legacy_record_version 3.9 is newer than TLS 1.3 (3.4)"))
        #expect(
            Scan.whole(firstPart + [22, 2, 0], .clientToServer)
                == .failed(reason: "a record's 0x02 is not a TLS major version (3)"))
    }

    @Test(
        "every record version from SSL 3.0 to TLS 1.3 is accepted",
        arguments: [UInt16(0x0300), 0x0301, 0x0302, 0x0303, 0x0304])
    func recordVersions(version: UInt16) {
        let bytes = Wire.record(version: version, ClientHelloBuilder().message)
        #expect(Scan.whole(bytes, .clientToServer).clientHello != nil)
    }

    @Test("once decided, the scanner ignores further bytes")
    func finalStateSticks() throws {
        var scanner = TLSHelloScanner(direction: .clientToServer)
        let decided = scanner.feed(try TLSCaptures.bytes("tls13-client"))
        #expect(decided.clientHello != nil)
        #expect(scanner.feed(Array("GET / HTTP/1.1\r\n".utf8)) == decided)
        #expect(scanner.finish() == decided)
        #expect(scanner.state == decided)
    }

    @Test("finish() before a decision")
    func finishEarly() throws {
        var silent = TLSHelloScanner(direction: .serverToClient)
        #expect(silent.feed([UInt8]()) == .needMoreData)
        #expect(silent.finish() == .notTLS(reason: "the stream ended before any bytes arrived"))

        var inHeader = TLSHelloScanner(direction: .clientToServer)
        #expect(inHeader.feed([22, 3]) == .needMoreData)
        #expect(inHeader.finish() == .failed(reason: "the stream ended inside the first TLS record header"))

        var inHello = TLSHelloScanner(direction: .clientToServer)
        #expect(inHello.feed(try TLSCaptures.bytes("tls13-client").prefix(100)) == .needMoreData)
        #expect(inHello.finish() == .failed(reason: "the stream ended before the ClientHello was complete"))
        #expect(inHello.feed(try TLSCaptures.bytes("tls13-client")) == inHello.state)
    }

    @Test("feed accepts any collection of bytes")
    func anyCollection() throws {
        let capture = try TLSCaptures.bytes("tls12-rsa-server")
        let expected = Scan.whole(capture, .serverToClient)
        var fromLazy = TLSHelloScanner(direction: .serverToClient)
        #expect(fromLazy.feed(capture.lazy.map { $0 }) == expected)
        var fromSlice = TLSHelloScanner(direction: .serverToClient)
        #expect(fromSlice.feed(capture[0..<capture.count]) == expected)
        var fromUnsafe = TLSHelloScanner(direction: .serverToClient)
        #expect(capture.withUnsafeBufferPointer { fromUnsafe.feed($0) } == expected)
    }
}
