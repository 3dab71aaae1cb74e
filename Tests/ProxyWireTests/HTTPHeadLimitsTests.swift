import ProxyWire
import Testing

@Suite("Head limits and early errors")
struct HTTPHeadLimitsTests {
    /// A request head of exactly `size` bytes, padded in one header value.
    static func request(ofSize size: Int) -> [UInt8] {
        let start = "GET http://e.example/ HTTP/1.1\r\nX-Pad: "
        let end = "\r\n\r\n"
        let padding = String(repeating: "a", count: size - start.utf8.count - end.utf8.count)
        return HTTPTestSupport.bytes(start + padding + end)
    }

    /// A request head with `count` header lines.
    static func request(headerLines count: Int) -> [UInt8] {
        var text = "GET http://e.example/ HTTP/1.1\r\n"
        for index in 0..<count { text += "X-Field-\(index): \(index)\r\n" }
        return HTTPTestSupport.bytes(text + "\r\n")
    }

    @Test("a head of exactly the limit is accepted; one byte more is 431")
    func headSizeLimit() throws {
        let exact = Self.request(ofSize: 16_384)
        #expect(exact.count == 16_384)
        guard case .complete = HTTPTestSupport.parseRequest(exact) else {
            Issue.record("a 16384-byte head was refused")
            return
        }
        let over = Self.request(ofSize: 16_385)
        let error = try #require(HTTPTestSupport.failure(HTTPTestSupport.parseRequest(over)))
        #expect(error.status == 431)
        #expect(error.reason.contains("request header fields too large"))
        #expect(error.statusPhrase == "Request Header Fields Too Large")
    }

    @Test("a request line with no version fails with 431 at the byte past the limit")
    func endlessRequestLine() throws {
        var parser = RequestHeadParser()
        var fed = 0
        var result = HeadParseResult<RequestHead>.needMoreData
        let line = HTTPTestSupport.bytes("GET http://e.example/" + String(repeating: "a", count: 20_000))
        for byte in line {
            fed += 1
            result = parser.consume([byte])
            if case .failed = result { break }
        }
        #expect(fed == 16_385)
        #expect(HTTPTestSupport.failure(result)?.status == 431)
    }

    @Test("leading empty lines count against the limit")
    func endlessEmptyLines() {
        let input = [UInt8](repeating: UInt8(ascii: "\n"), count: 20_000)
        #expect(HTTPTestSupport.failure(HTTPTestSupport.parseRequest(input))?.status == 431)
    }

    @Test("100 header lines are accepted; 101 are 431")
    func headerLineLimit() throws {
        guard case .complete(let head, _) = HTTPTestSupport.parseRequest(Self.request(headerLines: 100)) else {
            Issue.record("100 header lines were refused")
            return
        }
        #expect(head.headers.count == 100)
        let error = try #require(HTTPTestSupport.failure(HTTPTestSupport.parseRequest(Self.request(headerLines: 101))))
        #expect(error.status == 431)
        #expect(error.reason.contains("more than 100 header lines"))
    }

    @Test("limits can be changed")
    func customLimits() {
        let limits = HeadLimits(maximumHeadBytes: 64, maximumHeaderLines: 1)
        let twoLines = "GET http://e.example/ HTTP/1.1\r\nA: 1\r\nB: 2\r\n\r\n"
        #expect(HTTPTestSupport.failure(HTTPTestSupport.parseRequest(twoLines, limits: limits))?.status == 431)
        let long = "GET http://e.example/" + String(repeating: "x", count: 64) + " HTTP/1.1\r\n\r\n"
        #expect(HTTPTestSupport.failure(HTTPTestSupport.parseRequest(long, limits: limits))?.status == 431)
        let zero = HeadLimits(maximumHeadBytes: 0, maximumHeaderLines: 0)
        #expect(HTTPTestSupport.failure(HTTPTestSupport.parseRequest("G", limits: zero))?.status == 431)
    }

    @Test("a TLS ClientHello sent to the proxy fails at its first byte")
    func tlsFailsAtOnce() throws {
        var parser = RequestHeadParser()
        let error = try #require(HTTPTestSupport.failure(parser.consume([0x16])))
        #expect(error.status == 400)
        #expect(error.reason.contains("TLS handshake"))
    }

    @Test(
        "garbage fails at the first byte that cannot belong to a request",
        arguments: [
            ([UInt8]([0x00]), 1),
            (Array("GET\u{01}".utf8), 4),
            (Array("GET http://e.com/ HTTP/1.1\r\nBad Name: x".utf8), 32),
            (Array("GET http://e.com/ HTTX".utf8), 22),
            (Array("GET http://e.com/ HTTP/2".utf8), 24),
        ])
    func garbageFailsEarly(_ input: [UInt8], failingAt position: Int) {
        var parser = RequestHeadParser()
        for (index, byte) in input.enumerated() {
            let result = parser.consume([byte])
            if index + 1 < position {
                #expect(result == .needMoreData, "failed early at byte \(index + 1)")
            } else {
                #expect(HTTPTestSupport.failure(result) != nil, "did not fail at byte \(position)")
                return
            }
        }
    }

    @Test("the response parser applies the same limits and answers 502")
    func responseLimits() {
        var text = "HTTP/1.1 200 OK\r\n"
        for index in 0..<101 { text += "X-\(index): v\r\n" }
        let error = HTTPTestSupport.failure(HTTPTestSupport.parseResponse(text + "\r\n"))
        #expect(error?.status == 502)
        #expect(error?.reason.contains("more than 100 header lines") == true)
    }
}

@Suite("The method token's length")
struct HTTPMethodLengthTests {
    @Test(
        "a method up to 32 characters is taken; one longer gets 501, however its bytes arrive",
        arguments: [
            (32, false, true), (33, false, false), (200, false, false), (33, true, false), (32, true, true),
        ])
    func methodLength(length: Int, byteByByte: Bool, accepted: Bool) throws {
        let head = HTTPTestSupport.bytes(
            String(repeating: "M", count: length) + " http://e.example/ HTTP/1.1\r\nHost: e.example\r\n\r\n")
        var parser = RequestHeadParser()
        var result = HeadParseResult<RequestHead>.needMoreData
        if byteByByte {
            for byte in head {
                result = parser.consume([byte])
                if case .needMoreData = result { continue }
                break
            }
        } else {
            result = parser.consume(head)
        }
        switch result {
        case .complete(let parsed, _):
            #expect(accepted)
            #expect(parsed.method.count == length)
        case .failed(let error):
            #expect(!accepted)
            #expect(error.status == 501)
            #expect(error.reason.contains("longer than 32 characters"))
        case .needMoreData:
            Issue.record("no answer for a \(length)-character method")
        }
    }
}
