import HTTP2
import Testing

@Suite("an HTTP/2 session over libnghttp2, both ends in memory")
struct HTTP2SessionTests {
    @Test("a request with a body, answered with a body and trailers (gRPC's shape), arrives field for field")
    func requestAndResponseWithTrailers() throws {
        let pair = try SessionPair()
        pair.serverHeard.onHeaders = { server, fields, stream in
            guard fields.value(of: ":method") == "POST" else { return }
            try? server.submitResponse(
                [HTTP2Field(":status", "200"), HTTP2Field("content-type", "application/grpc")], on: stream,
                hasBody: true)
            [UInt8]("reply".utf8).withUnsafeBytes { server.send($0, on: stream) }
            server.finish(stream, trailers: [HTTP2Field("grpc-status", "0"), HTTP2Field("grpc-message", "fine")])
        }
        let stream = try pair.client.submitRequest(request("/svc/Call", method: "POST"), hasBody: true)
        [UInt8]("hello".utf8).withUnsafeBytes { pair.client.send($0, on: stream) }
        pair.client.finish(stream)
        try pair.pump()

        #expect(pair.serverHeard.headerLists.first == request("/svc/Call", method: "POST"))
        #expect(pair.serverHeard.body(on: stream) == Array("hello".utf8))
        #expect(pair.serverHeard.heard.contains(.endedData(stream: stream)))
        #expect(pair.clientHeard.body(on: stream) == Array("reply".utf8))
        let lists = pair.clientHeard.heard.compactMap { heard -> (HTTP2HeadersKind, Bool, [HTTP2Field])? in
            if case .headers(let fields, let kind, _, let ends) = heard { (kind, ends, fields) } else { nil }
        }
        #expect(lists.count == 2)
        #expect(lists.first?.0 == .response && lists.first?.1 == false)
        #expect(lists.last?.0 == .headers && lists.last?.1 == true)
        #expect(lists.last?.2 == [HTTP2Field("grpc-status", "0"), HTTP2Field("grpc-message", "fine")])
        #expect(pair.clientHeard.heard.contains(.closed(stream: stream, .noError, nil)))
        #expect(pair.clientHeard.taken[stream] == 5)
    }

    @Test("body bytes beyond the announced window wait until the receiver says it passed the first ones on")
    func flowControlFollowsConsumption() throws {
        var small = HTTP2Settings()
        small.initialWindowSize = 16 * 1024
        let pair = try SessionPair(server: small)
        try pair.pump()  // The server's SETTINGS (its window) reach the client first.
        let stream = try pair.client.submitRequest(request("/upload", method: "PUT"), hasBody: true)
        let body = (0..<(64 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        body.withUnsafeBytes { pair.client.send($0, on: stream) }
        pair.client.finish(stream)
        try pair.pump()
        // The window announced bounds what arrived, and so what the receiver holds.
        #expect(pair.serverHeard.body(on: stream).count == 16 * 1024)
        #expect(pair.client.queuedBytes(on: stream) == 48 * 1024)

        var received = pair.serverHeard.body(on: stream).count
        var rounds = 0
        while received < body.count, rounds < 64 {
            pair.server.consumed(received, on: stream)
            try pair.pump()
            received = pair.serverHeard.body(on: stream).count
            rounds += 1
        }
        #expect(pair.serverHeard.body(on: stream) == body)
        #expect(pair.serverHeard.heard.contains(.endedData(stream: stream)))
    }

    @Test("streams past the server's SETTINGS_MAX_CONCURRENT_STREAMS wait in the client's queue")
    func concurrentStreamsQueue() throws {
        var two = HTTP2Settings()
        two.maxConcurrentStreams = 2
        let pair = try SessionPair(server: two)
        try pair.pump()  // The server's SETTINGS reach the client first.
        let streams = try (0..<5).map { _ in try pair.client.submitRequest(request("/q"), hasBody: false) }
        try pair.pump()
        #expect(pair.serverHeard.headerLists.count == 2)
        #expect(pair.client.peerMaxConcurrentStreams == 2)

        try pair.server.submitResponse([HTTP2Field(":status", "204")], on: streams[0], hasBody: false)
        try pair.pump()
        #expect(pair.serverHeard.headerLists.count == 3)
    }

    @Test("a header list over SETTINGS_MAX_HEADER_LIST_SIZE resets its stream and is never delivered")
    func oversizedHeaderList() throws {
        var limited = HTTP2Settings()
        limited.maxHeaderListSize = 1024
        let pair = try SessionPair(server: limited)
        let big = HTTP2Field("x-big", String(repeating: "a", count: 2048))
        let stream = try pair.client.submitRequest(request("/", extra: [big]), hasBody: false)
        try pair.pump()
        #expect(pair.serverHeard.headerLists.isEmpty)
        let reset = pair.serverHeard.heard.first { if case .closed = $0 { true } else { false } }
        guard case .closed(stream, _, .headerListTooLarge(let size, let head)) = reset else {
            Issue.record("no reset for the header list: \(pair.serverHeard.heard)")
            return
        }
        #expect(size > 1024 && size <= 1024 + big.listSize)
        // What the request was, as far as it came: its method and path, not the field too large.
        #expect(head.map(\.nameText) == [":method", ":path"], "\(head)")
        #expect(head.value(of: ":path") == "/" && head.value(of: ":method") == "GET")
        // A path over 2 KiB is not kept: a peer resetting many streams at once holds little.
        let longPath = "/" + String(repeating: "p", count: 3000)
        let long = try pair.client.submitRequest(request(longPath, extra: [big]), hasBody: false)
        try pair.pump()
        let longReset = pair.serverHeard.heard.first { if case .closed(long, _, _) = $0 { true } else { false } }
        guard case .closed(long, _, .headerListTooLarge(_, let longHead)) = longReset else {
            Issue.record("no reset for the long path's list: \(pair.serverHeard.heard)")
            return
        }
        #expect(longHead.map(\.nameText) == [":method"], "\(longHead)")
        #expect(pair.clientHeard.heard.contains { if case .closed(stream, _, _) = $0 { true } else { false } })
    }

    @Test("an HPACK bomb (one 4,000-byte table entry named 1,000 times in a 1-KB frame) holds no more than the limit")
    func hpackBomb() throws {
        let pair = try SessionPair()
        // The preface, an empty SETTINGS, then one HEADERS frame by hand: :method GET, :scheme https,
        // :path / (static indexes 2, 7, 4), a literal x-bomb with incremental indexing (4,000 bytes,
        // which enters the dynamic table at index 62), then index 62 a thousand times.
        var block: [UInt8] = [0x82, 0x87, 0x84, 0x40, 0x06] + Array("x-bomb".utf8)
        block += [0x7F, 0xA1, 0x1E] + [UInt8](repeating: UInt8(ascii: "b"), count: 4000)  // 127 + 3873
        block += [UInt8](repeating: 0xBE, count: 1000)
        var bytes = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
        bytes += [0, 0, 0, 0x04, 0, 0, 0, 0, 0]
        bytes += frameHeader(length: block.count, type: 0x01, flags: 0x05, stream: 1) + block
        try pair.serverReceives(bytes)
        #expect(pair.serverHeard.headerLists.isEmpty)
        let closed = pair.serverHeard.heard.first { if case .closed = $0 { true } else { false } }
        guard case .closed(1, _, .headerListTooLarge(let size, let head)) = closed else {
            Issue.record(
                "the bomb was not refused: \(pair.serverHeard.heard.count) events, errors \(pair.serverErrors)")
            return
        }
        #expect(size <= 64 * 1024 + 4_100)
        #expect(head.map(\.nameText) == [":method", ":path"], "\(head)")
    }

    @Test(
        "error codes keep their RFC 9113 names and unknown values",
        arguments: [
            (UInt32(0), "NO_ERROR"), (1, "PROTOCOL_ERROR"), (8, "CANCEL"), (0xb, "ENHANCE_YOUR_CALM"),
            (0xd, "HTTP_1_1_REQUIRED"), (0xe, "0xe"), (0x1234, "0x1234"),
        ])
    func errorCodes(raw: UInt32, name: String) {
        let code = HTTP2ErrorCode(rawValue: raw)
        #expect(code.description == name)
        #expect(code.rawValue == raw)
    }
}

/// A frame's 9-byte header (RFC 9113 §4.1).
func frameHeader(length: Int, type: UInt8, flags: UInt8, stream: UInt32) -> [UInt8] {
    [
        UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, flags,
        UInt8(stream >> 24 & 0x7F), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF),
    ]
}
