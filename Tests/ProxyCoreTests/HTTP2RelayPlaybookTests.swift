import HTTP2
import LogRecord
import Testing

@testable import ProxyCore

/// The HTTP/2 relay with both peers in memory (scripted streams, real TLS, libnghttp2 on every end,
/// the scripted clock): how streams map between the legs, the origin's stream limit, flow control,
/// resets, trailers and the idle end, each shown on the wire and on the lines.
@Suite("Intercept mode, HTTP/2 relayed stream by stream (scripted)")
struct HTTP2RelayPlaybookTests {
    /// An intercepted connection on which both legs said h2, with an HTTP/2 session on each peer.
    /// `hangUp` ends both peers' connections (close_notify, then the end): every test calls it last,
    /// so the session ends and lets go of what it holds, as a real connection's end makes it.
    static func connected(originSettings: HTTP2Settings = HTTP2Settings()) throws -> (
        InterceptRig, device: HTTP2PlaybookPeer, origin: HTTP2PlaybookPeer, hangUp: () -> Void
    ) {
        let rig = try InterceptRig()
        let (client, upstream, deviceTLS, originTLS) = try rig.intercepted(
            alpn: ["h2", "http/1.1"], originALPN: ["h2", "http/1.1"])
        #expect(deviceTLS.selectedProtocol == "h2", "the device is answered with what the origin chose")
        let device = try HTTP2PlaybookPeer(deviceTLS, role: .client)
        let origin = try HTTP2PlaybookPeer(originTLS, role: .server, settings: originSettings)
        rig.settle()
        return (rig, device, origin, { Self.hangUp(rig, client, upstream, deviceTLS, originTLS) })
    }

    static func hangUp(
        _ rig: InterceptRig, _ client: ScriptedStream, _ upstream: ScriptedStream, _ device: MemoryTLSPeer,
        _ origin: MemoryTLSPeer
    ) {
        // The HTTP/2 peers may be gone by now (a deferred call runs after their last use).
        device.application = nil
        origin.application = nil
        device.closeNotify()
        client.peerEnds()
        origin.closeNotify()
        upstream.peerEnds()
        rig.settle()
    }

    static func get(_ path: String) -> [(String, String)] {
        [(":method", "GET"), (":scheme", "https"), (":authority", InterceptRig.host), (":path", path)]
    }

    @Test("two streams answered out of order: each answer reaches its own stream, each line its own id")
    func mapping() throws {
        let (rig, device, origin, hangUp) = try Self.connected()
        defer { hangUp() }
        let first = try device.request(Self.get("/first"))
        let second = try device.request(Self.get("/second"))
        rig.settle()
        #expect(origin.opened.count == 2)
        let byPath = Dictionary(uniqueKeysWithValues: origin.opened.map { (origin.value(":path", on: $0)!, $0) })
        try origin.respond(try #require(byPath["/second"]), status: 201, body: Array("two".utf8))
        rig.settle()
        try origin.respond(try #require(byPath["/first"]), status: 200, body: Array("one".utf8))
        rig.settle()
        #expect(device.value(":status", on: first) == "200" && device.bodies[first] == Array("one".utf8))
        #expect(device.value(":status", on: second) == "201" && device.bodies[second] == Array("two".utf8))
        let lines = rig.environment.requests
        #expect(lines.map(\.streamID) == [second, first], "logged as each stream ends")
        #expect(lines.allSatisfy { $0.httpVersion == "HTTP/2" && $0.requestHeadBytes == -1 })
        #expect(lines.map(\.url) == ["https://\(InterceptRig.host)/second", "https://\(InterceptRig.host)/first"])
    }

    @Test("a stream's line is in the log before the bytes that end it reach the device")
    func lineBeforeAnswer() throws {
        let rig = try InterceptRig()
        let (client, upstream, deviceTLS, originTLS) = try rig.intercepted(
            alpn: ["h2", "http/1.1"], originALPN: ["h2", "http/1.1"])
        let device = try HTTP2PlaybookPeer(deviceTLS, role: .client)
        let origin = try HTTP2PlaybookPeer(originTLS, role: .server)
        rig.settle()
        var writesWithLinesHeld = 0
        var writes = 0
        // Weak: the rig owns the stream, which would own the rig through its hook.
        client.onWrite = { [weak environment = rig.environment] in
            writes += 1
            if environment?.heldRequests.isEmpty == false { writesWithLinesHeld += 1 }
        }
        defer {
            client.onWrite = nil
            Self.hangUp(rig, client, upstream, deviceTLS, originTLS)
        }
        let streams = try (0..<3).map { try device.request(Self.get("/\($0)")) }
        rig.settle()
        #expect(origin.opened.count == 3)
        // All three answered in one read of the origin's: their lines go out together, first.
        for opened in origin.opened { try origin.respond(opened, status: 200, body: Array("ok".utf8)) }
        rig.settle()
        #expect(streams.allSatisfy { device.value(":status", on: $0) == "200" })
        #expect(rig.environment.requests.count == 3 && rig.environment.heldRequests.isEmpty)
        #expect(writes > 0)
        #expect(writesWithLinesHeld == 0, "the device was written to while its streams' lines were held")
    }

    @Test("the origin allows one stream at a time: the second request waits for the first to close")
    func originStreamLimit() throws {
        var settings = HTTP2Settings()
        settings.maxConcurrentStreams = 1
        let (rig, device, origin, hangUp) = try Self.connected(originSettings: settings)
        defer { hangUp() }
        let first = try device.request(Self.get("/a"))
        let second = try device.request(Self.get("/b"))
        rig.settle()
        #expect(origin.opened.count == 1, "held until a stream closes")
        try origin.respond(origin.opened[0], status: 200, body: [1])
        rig.settle()
        #expect(origin.opened.count == 2)
        try origin.respond(origin.opened[1], status: 200, body: [2])
        rig.settle()
        #expect(device.bodies[first] == [1] && device.bodies[second] == [2])
    }

    @Test("a device that takes nothing: the proxy reads no more of the origin than the windows allow")
    func flowControl() throws {
        let (rig, device, origin, hangUp) = try Self.connected()
        defer { hangUp() }
        device.consumes = false
        let stream = try device.request(Self.get("/big"))
        rig.settle()
        let body = [UInt8](repeating: 7, count: 1 << 20)
        try origin.respond(origin.opened[0], status: 200, body: body)
        rig.settle()
        let received = device.bodies[stream]?.count ?? 0
        let queued = origin.session.queuedBytes(on: origin.opened[0])
        let window = Int(HTTP2Settings().initialWindowSize)
        #expect(received <= window, "the device's window")
        // The device's window, and the window the proxy announced to the origin for the stream.
        #expect(body.count - queued <= 2 * window, "the origin sent \(body.count - queued)")
        device.consumes = true
        device.session.consumed(received, on: stream)
        rig.settle()
        #expect(device.bodies[stream]?.count == body.count, "all of it once the device takes it")
    }

    @Test("streams that end while a device takes nothing: the proxy holds no more than the origin's connection window")
    func connectionWindowBoundsClosedStreams() throws {
        let rig = try InterceptRig()
        let (client, upstream, deviceTLS, originTLS) = try rig.intercepted(alpn: ["h2"], originALPN: ["h2"])
        defer { Self.hangUp(rig, client, upstream, deviceTLS, originTLS) }
        var small = HTTP2Settings()
        small.initialWindowSize = 16 * 1024
        small.connectionWindowSize = 65_535
        let device = try HTTP2PlaybookPeer(deviceTLS, role: .client, settings: small)
        let origin = try HTTP2PlaybookPeer(originTLS, role: .server)
        device.consumes = false
        rig.settle()
        for index in 0..<8 { try device.request(Self.get("/part-\(index)")) }
        rig.settle()
        // Each body fits its stream's window, so each origin stream can end; together they are more
        // than the connection's window.
        let body = [UInt8](repeating: 1, count: 200 * 1024)
        // One after the other, so that each can end before the window is spent (sent together, they
        // would share it and none would end).
        for stream in origin.opened {
            try origin.respond(stream, status: 200, body: body)
            rig.settle()
        }
        let sent = origin.opened.reduce(0) { $0 + body.count - origin.session.queuedBytes(on: $1) }
        let limit = Int(HTTP2Settings().connectionWindowSize) + Int(small.connectionWindowSize)
        #expect(sent <= limit, "the origin sent \(sent) bytes; the proxy may hold \(limit)")
        device.consumes = true
        for (stream, bytes) in device.bodies { device.session.consumed(bytes.count, on: stream) }
        rig.settle()
        #expect(device.bodies.values.allSatisfy { $0.count == body.count }, "all of it, once the device reads")
    }

    @Test(
        "an origin that answers and resets (NO_ERROR) before reading the upload: the device has the answer whole, and is asked to stop too"
    )
    func uploadAnsweredEarly() throws {
        let (rig, device, origin, hangUp) = try Self.connected()
        defer { hangUp() }
        origin.consumes = false
        let body = [UInt8](repeating: 9, count: 1 << 20)
        let post = [(":method", "POST"), (":scheme", "https"), (":authority", InterceptRig.host), (":path", "/upload")]
        let stream = try device.request(post, body: body)
        rig.settle()
        let twin = try #require(origin.opened.first)
        #expect(device.session.queuedBytes(on: stream) > 0, "the origin's windows hold the upload back")
        // RFC 9113 §8.1: a complete response, then RST_STREAM NO_ERROR, and the rest goes unread.
        // The answer is larger than the device's window (256 KiB), which it keeps shut for now: the proxy
        // still holds most of it when the origin's reset comes.
        let answer = [UInt8](repeating: 4, count: 400_000)
        device.consumes = false
        try origin.respond(twin, status: 413, body: answer)
        rig.settle()
        origin.session.reset(twin, code: .noError)
        rig.settle()
        #expect(device.closed[stream] == nil, "not before the answer is out")
        device.consumes = true
        device.session.consumed(device.bodies[stream]?.count ?? 0, on: stream)
        rig.settle()
        #expect(device.value(":status", on: stream) == "413")
        #expect(device.bodies[stream] == answer, "the answer whole: \(device.bodies[stream]?.count ?? 0) bytes")
        #expect(device.ended.contains(stream), "the answer's END_STREAM came before the reset")
        #expect(device.closed[stream] == .noError, "RST_STREAM NO_ERROR, passed on")
        #expect(device.session.queuedBytes(on: stream) == 0, "the rest of the upload is not sent")
        let line = try #require(rig.environment.requests.first { $0.streamID == stream })
        #expect(line.status == 413 && line.requestBodyBytes < Int64(body.count), "\(line.requestBodyBytes)")
        #expect(line.failure == nil && line.upstreamError == nil)
    }

    @Test("streams the proxy's HTTP/2 library resets for broken rules get a line that says what was broken")
    func brokenRules() throws {
        let (rig, device, origin, hangUp) = try Self.connected()
        defer { hangUp() }
        // A connection-specific field (RFC 9113 §8.2.2): reset before the relay sees a request.
        let forbidden = try device.request(Self.get("/forbidden") + [("connection", "keep-alive")])
        // A body shorter than its content-length: the request was seen, then the stream reset.
        let post = [(":method", "POST"), (":scheme", "https"), (":authority", InterceptRig.host), (":path", "/short")]
        let short = try device.request(post + [("content-length", "10")], body: Array("abc".utf8))
        let answered = try device.request(Self.get("/answer"))
        rig.settle()
        #expect(device.closed[forbidden] == .protocolError && device.closed[short] == .protocolError)
        // Neither reached the origin: the short one's HEADERS were still queued when its reset came.
        #expect(origin.opened.count == 1)
        // The origin answers with a field HTTP/2 forbids: the proxy resets its stream, and the device's.
        let twin = try #require(origin.opened.first { origin.value(":path", on: $0) == "/answer" })
        try origin.respond(twin, status: 200, fields: [("transfer-encoding", "chunked")], body: [1])
        rig.settle()
        #expect(device.closed[answered] != nil && device.value(":status", on: answered) == nil)
        let lines = Dictionary(uniqueKeysWithValues: rig.environment.requests.map { ($0.streamID!, $0) })
        #expect(lines[forbidden]?.failure == .badRequest)
        #expect(lines[forbidden]?.upstreamError?.contains("forbids or malforms (RFC 9113 §8.2): connection") == true)
        // The relay never saw the request, but its pseudo-header fields came before the bad field.
        #expect(lines[forbidden]?.method == "GET" && lines[forbidden]?.url?.hasSuffix("/forbidden") == true)
        #expect(lines[forbidden]?.loggedRequest != nil, "report, har and the live view take the line")
        #expect(lines[short]?.failure == .badRequest && lines[short]?.method == "POST")
        #expect(
            lines[short]?.upstreamError?.contains("content-length") == true, "\(lines[short]?.upstreamError ?? "-")")
        #expect(lines[answered]?.failure == .badResponse)
        #expect(lines[answered]?.upstreamError?.contains("bad response: the origin sent a header field") == true)
        #expect(lines[answered]?.upstreamError?.contains("transfer-encoding") == true)
    }

    @Test("a reset by either peer resets the other leg's twin, and the line says who")
    func resets() throws {
        let (rig, device, origin, hangUp) = try Self.connected()
        defer { hangUp() }
        let byDevice = try device.request(Self.get("/device-resets"))
        let byOrigin = try device.request(Self.get("/origin-resets"))
        rig.settle()
        device.session.reset(byDevice, code: .cancel)
        rig.settle()
        let twin = try #require(origin.opened.first { origin.value(":path", on: $0) == "/device-resets" })
        #expect(origin.closed[twin] == .cancel)
        let other = try #require(origin.opened.first { origin.value(":path", on: $0) == "/origin-resets" })
        origin.session.reset(other, code: .refusedStream)
        rig.settle()
        #expect(device.closed[byOrigin] == .refusedStream, "the origin's code passed on")
        let lines = Dictionary(uniqueKeysWithValues: rig.environment.requests.map { ($0.streamID!, $0) })
        #expect(lines[byDevice]?.failure == .clientClosed)
        #expect(lines[byOrigin]?.failure == .upstreamClosed)
        #expect(lines[byOrigin]?.upstreamError?.contains("REFUSED_STREAM") == true)
    }

    @Test("trailers both ways: the request's reach the origin, the response's the device, grpc-status the line")
    func trailers() throws {
        let (rig, device, origin, hangUp) = try Self.connected()
        defer { hangUp() }
        let fields = [
            (":method", "POST"), (":scheme", "https"), (":authority", InterceptRig.host), (":path", "/pkg.Svc/Call"),
            ("content-type", "application/grpc"), ("te", "trailers"),
        ]
        let stream = try device.session.submitRequest(fields.map { HTTP2Field($0.0, $0.1) }, hasBody: true)
        ([0, 0, 0, 0, 1, 9] as [UInt8]).withUnsafeBytes { device.session.send($0, on: stream) }
        device.session.finish(stream, trailers: [HTTP2Field("x-request-trailer", "yes")])
        rig.settle()
        let twin = try #require(origin.opened.first)
        #expect(origin.bodies[twin] == [0, 0, 0, 0, 1, 9])
        #expect(origin.headers[twin]?.last?.first?.nameText == "x-request-trailer")
        try origin.respond(
            twin, status: 200, fields: [("content-type", "application/grpc")], body: [0, 0, 0, 0, 0],
            trailers: [("grpc-status", "5"), ("grpc-message", "not%20found")])
        rig.settle()
        #expect(device.headers[stream]?.last?.contains { $0.nameText == "grpc-status" && $0.valueText == "5" } == true)
        let line = try #require(rig.environment.requests.first)
        #expect(line.grpcStatus == 5 && line.grpcMessage == "not found" && line.status == 200)
        #expect(line.requestBodyBytes == 6 && line.responseBodyBytes == 5)
    }

    @Test(
        "a request naming another authority, by :authority or by host, gets a 400 on its stream; nothing reaches the origin"
    )
    func foreignAuthority() throws {
        let (rig, device, origin, hangUp) = try Self.connected()
        defer { hangUp() }
        let byAuthority = try device.request(
            [(":method", "GET"), (":scheme", "https"), (":authority", "evil.example"), (":path", "/")])
        // host instead of :authority (RFC 9113 §8.3.1 allows it; libnghttp2 checks neither).
        let byHost = try device.request([
            (":method", "GET"), (":scheme", "https"), (":path", "/"), ("host", "evil.example"),
        ])
        let both = try device.request(
            [
                (":method", "GET"), (":scheme", "https"), (":authority", InterceptRig.host), (":path", "/"),
                ("host", "evil.example"),
            ])
        rig.settle()
        for stream in [byAuthority, byHost, both] {
            #expect(device.value(":status", on: stream) == "400", "stream \(stream)")
        }
        #expect(origin.opened.isEmpty)
        #expect(rig.environment.requests.map(\.status) == [400, 400, 400])
    }

    @Test("a :path that is not a path (a scheme libnghttp2 does not check) gets a 400, and a line naming no other host")
    func pathNotAPath() throws {
        let (rig, device, origin, hangUp) = try Self.connected()
        defer { hangUp() }
        let stream = try device.request(
            [(":method", "GET"), (":scheme", "foo"), (":authority", InterceptRig.host), (":path", "@evil.example/x")])
        // `*` is OPTIONS's alone (libnghttp2 checks that only for http and https too).
        let star = try device.request(
            [(":method", "GET"), (":scheme", "foo"), (":authority", InterceptRig.host), (":path", "*")])
        // OPTIONS * is relayed, its URL the origin's own.
        let options = try device.request(
            [(":method", "OPTIONS"), (":scheme", "https"), (":authority", InterceptRig.host), (":path", "*")])
        rig.settle()
        #expect(device.value(":status", on: stream) == "400" && device.value(":status", on: star) == "400")
        #expect(origin.opened.count == 1 && origin.value(":path", on: origin.opened[0]) == "*")
        let lines = Dictionary(uniqueKeysWithValues: rig.environment.requests.map { ($0.streamID!, $0) })
        let line = try #require(lines[stream])
        #expect(line.url == nil && line.method == "GET", "\(line.url ?? "-")")
        #expect(line.upstreamError?.contains(":path is not a path") == true, "\(line.upstreamError ?? "-")")
        #expect(lines[star]?.url == nil)
        try origin.respond(origin.opened[0], status: 204)
        rig.settle()
        let optionsLine = try #require(rig.environment.requests.first { $0.streamID == options })
        #expect(optionsLine.url?.hasPrefix("https://") == true && optionsLine.url?.contains("*") == false)
    }

    @Test("idle past the idle timeout: a GOAWAY to the device, and the connection ends, closed_idle")
    func idle() throws {
        let (rig, device, origin, hangUp) = try Self.connected()
        defer { hangUp() }
        try device.request(Self.get("/one"))
        rig.settle()
        try origin.respond(origin.opened[0], status: 204)
        rig.settle()
        let watch = try #require(rig.environment.idleWatches.last { $0.isWatching })
        watch.comeDue()
        rig.settle()
        #expect(device.goAways == [.noError], "the device is told before the connection ends")
        let record = try #require(rig.record, "the connection's line")
        #expect(record.failure == .closedIdle && record.requests == 1)
    }

    @Test("an interim 103 from the origin reaches the device before the final response; the line has the final status")
    func interimResponse() throws {
        let (rig, device, origin, hangUp) = try Self.connected()
        defer { hangUp() }
        let stream = try device.request(Self.get("/early-hints"))
        rig.settle()
        let twin = try #require(origin.opened.first)
        try origin.session.submitInterim(
            [HTTP2Field(":status", "103"), HTTP2Field("link", "</style.css>; rel=preload")], on: twin)
        rig.settle()
        try origin.respond(twin, status: 200, body: Array("page".utf8))
        rig.settle()
        let lists = device.headers[stream] ?? []
        #expect(lists.map { $0.first { $0.nameText == ":status" }?.valueText } == ["103", "200"], "\(lists)")
        #expect(lists.first?.contains { $0.nameText == "link" && $0.valueText == "</style.css>; rel=preload" } == true)
        #expect(device.bodies[stream] == Array("page".utf8))
        #expect(rig.environment.requests.map(\.status) == [200])
    }

    @Test("the origin is told the proxy takes no push (SETTINGS_ENABLE_PUSH 0); the device is offered none")
    func noPush() throws {
        let (rig, device, origin, hangUp) = try Self.connected()
        defer { hangUp() }
        try device.request(Self.get("/"))
        rig.settle()
        #expect(!origin.session.peerAllowsPush, "the proxy's SETTINGS to the origin")
        try origin.respond(try #require(origin.opened.first), status: 204)
        rig.settle()
        #expect(device.opened.isEmpty, "no stream the device did not open")
    }

    @Test(
        "GOAWAY from the origin: the device is told, a stream past it is refused (REFUSED_STREAM) for the device to retry, and the one before it completes"
    )
    func originGoAway() throws {
        let (rig, device, origin, hangUp) = try Self.connected()
        defer { hangUp() }
        let first = try device.request(Self.get("/first"))
        rig.settle()
        let twin = try #require(origin.opened.first)
        // The origin goes away after its first stream (the last it processed), as nginx does after
        // its keepalive_requests; the device's second request is on its way.
        origin.session.goAway(code: .noError)
        let second = try device.request(Self.get("/second"))
        rig.settle()
        #expect(device.goAways == [.noError], "passed on to the device")
        #expect(device.closed[second] == .refusedStream, "\(device.closed)")
        #expect(origin.opened == [twin], "nothing past the GOAWAY reaches the origin")
        try origin.respond(twin, status: 200, body: Array("one".utf8))
        rig.settle()
        #expect(device.value(":status", on: first) == "200" && device.bodies[first] == Array("one".utf8))
        let lines = Dictionary(uniqueKeysWithValues: rig.environment.requests.map { ($0.streamID!, $0) })
        #expect(
            lines[second]?.upstreamError?.contains("REFUSED_STREAM") == true, "\(String(describing: lines[second]))")
        #expect(lines[first]?.status == 200)
    }

    @Test("CONNECT on a stream is answered 405 by the proxy; nothing reaches the origin")
    func connectRefused() throws {
        let (rig, device, origin, hangUp) = try Self.connected()
        defer { hangUp() }
        let stream = try device.request([(":method", "CONNECT"), (":authority", InterceptRig.host)])
        rig.settle()
        #expect(device.value(":status", on: stream) == "405")
        #expect(origin.opened.isEmpty)
        let line = try #require(rig.environment.requests.first)
        #expect(line.status == 405 && line.upstreamError?.contains("CONNECT") == true, "\(line)")
    }

    @Test("send_ms of an upload: until the device ended the stream and its last byte went to the origin")
    func uploadSendTime() throws {
        let (rig, device, origin, hangUp) = try Self.connected()
        defer { hangUp() }
        let fields = [(":method", "POST"), (":scheme", "https"), (":authority", InterceptRig.host), (":path", "/up")]
        let stream = try device.session.submitRequest(fields.map { HTTP2Field($0.0, $0.1) }, hasBody: true)
        Array("first half".utf8).withUnsafeBytes { device.session.send($0, on: stream) }
        rig.settle()
        rig.environment.advance(by: .milliseconds(250))
        Array(", second half".utf8).withUnsafeBytes { device.session.send($0, on: stream) }
        device.session.finish(stream)
        rig.settle()
        let twin = try #require(origin.opened.first)
        #expect(origin.bodies[twin] == Array("first half, second half".utf8))
        rig.environment.advance(by: .milliseconds(100))
        try origin.respond(twin, status: 204)
        rig.settle()
        let line = try #require(rig.environment.requests.first)
        #expect(line.sendMilliseconds == 250, "\(line)")
        #expect(line.durationMilliseconds == 350 && line.requestBodyBytes == 23)
    }

    @Test(
        "bytes waiting for a device that takes nothing: an idle timeout after the last body byte moved, a GOAWAY and closed_idle, whatever else the connection does"
    )
    func stalledConnection() throws {
        let (rig, device, origin, hangUp) = try Self.connected()
        defer { hangUp() }
        // The device takes nothing: the response's bytes wait in the proxy for its window.
        device.consumes = false
        let big = try device.request(Self.get("/big"))
        rig.settle()
        try origin.respond(try #require(origin.opened.first), status: 200, body: [UInt8](repeating: 1, count: 1 << 20))
        rig.settle()
        let idle = rig.environment.settings.idleTimeout
        rig.environment.advance(by: idle / 2)
        // Busy all the while: a new stream (answered at once, no body) is no body byte moving.
        let other = try device.request(Self.get("/other"))
        rig.settle()
        try origin.respond(try #require(origin.opened.last), status: 204)
        rig.settle()
        #expect(device.value(":status", on: other) == "204")
        #expect(device.goAways.isEmpty, "not yet: half the idle timeout")
        // The check every half idle timeout first sees nothing moved at the half: an idle timeout
        // after that, the connection ends.
        rig.environment.advance(by: idle / 2)
        rig.settle()
        #expect(device.goAways.isEmpty, "not yet: still for half the idle timeout, as far as the checks know")
        rig.environment.advance(by: idle / 2)
        rig.settle()
        #expect(device.goAways == [.noError], "the device is told before the connection ends")
        #expect(device.closed[big] == nil || device.closed[big] != .noError)
        let record = try #require(rig.record, "the connection's line")
        #expect(record.failure == .closedIdle, "\(record)")
        #expect(
            record.upstreamError?.hasPrefix("closed: stalled for") == true,
            "\(String(describing: record.upstreamError))")
        #expect(record.upstreamError?.contains("bytes for the device") == true)
    }

    @Test(
        "an origin that resets with NO_ERROR before its answer ended: the device's stream is reset too, and the line says why"
    )
    func originResetMidAnswer() throws {
        let (rig, device, origin, hangUp) = try Self.connected()
        defer { hangUp() }
        let stream = try device.request(Self.get("/cut"))
        rig.settle()
        let twin = try #require(origin.opened.first)
        // The answer's head and part of its body, then the reset: no END_STREAM ever.
        try origin.session.submitResponse([HTTP2Field(":status", "200")], on: twin, hasBody: true)
        Array("part of it".utf8).withUnsafeBytes { origin.session.send($0, on: twin) }
        rig.settle()
        origin.session.reset(twin, code: .noError)
        rig.settle()
        #expect(device.bodies[stream] == Array("part of it".utf8))
        #expect(!device.ended.contains(stream), "no END_STREAM: the answer is not whole")
        #expect(device.closed[stream] == .noError, "reset as the origin reset it, not left open")
        let line = try #require(rig.environment.requests.first { $0.streamID == stream })
        #expect(line.failure == .upstreamClosed && line.upstreamError?.contains("before its response ended") == true)
    }
}
