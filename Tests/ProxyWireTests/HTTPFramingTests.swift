import ProxyWire
import Testing

/// The expected outcome of a framing decision: a framing, or an error status.
enum HTTPExpectedFraming: Sendable, Equatable {
    case framing(BodyFraming)
    case error(Int)
}

@Suite("Message framing and keep-alive")
struct HTTPFramingTests {
    static func requestFraming(_ fields: String, version: String = "HTTP/1.1") throws -> HTTPExpectedFraming {
        let head = try HTTPTestSupport.requestHead("POST http://e.example/ \(version)\r\n\(fields)\r\n")
        do {
            return .framing(try head.bodyFraming())
        } catch {
            return .error(error.status)
        }
    }

    @Test(
        "request framing (RFC 9112 §6.3)",
        arguments: [
            ("", "HTTP/1.1", HTTPExpectedFraming.framing(.none)),
            ("Content-Length: 10\r\n", "HTTP/1.1", .framing(.contentLength(10))),
            ("Content-Length: 0\r\n", "HTTP/1.1", .framing(.contentLength(0))),
            ("Content-Length: 10\r\n", "HTTP/1.0", .framing(.contentLength(10))),
            ("Content-Length: 5, 5\r\n", "HTTP/1.1", .framing(.contentLength(5))),
            ("Content-Length: 5\r\nContent-Length: 5\r\n", "HTTP/1.1", .framing(.contentLength(5))),
            ("Content-Length: 18446744073709551615\r\n", "HTTP/1.1", .framing(.contentLength(UInt64.max))),
            ("Content-Length: 5, 6\r\n", "HTTP/1.1", .error(400)),
            ("Content-Length: 5\r\nContent-Length: 6\r\n", "HTTP/1.1", .error(400)),
            ("Content-Length: abc\r\n", "HTTP/1.1", .error(400)),
            ("Content-Length: -1\r\n", "HTTP/1.1", .error(400)),
            ("Content-Length: +5\r\n", "HTTP/1.1", .error(400)),
            ("Content-Length: 0x10\r\n", "HTTP/1.1", .error(400)),
            ("Content-Length:\r\n", "HTTP/1.1", .error(400)),
            ("Content-Length: 5,\r\n", "HTTP/1.1", .error(400)),
            ("Content-Length: 18446744073709551616\r\n", "HTTP/1.1", .error(400)),
            ("Transfer-Encoding: chunked\r\n", "HTTP/1.1", .framing(.chunked)),
            ("Transfer-Encoding: Chunked\r\n", "HTTP/1.1", .framing(.chunked)),
            // Only chunked alone is forwarded on a request (nginx's rule): an origin that ignores
            // the list reads the chunks as a request.
            ("Transfer-Encoding: gzip, chunked\r\n", "HTTP/1.1", .error(501)),
            ("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", "HTTP/1.1", .error(501)),
            ("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", "HTTP/1.1", .error(400)),
            ("Transfer-Encoding: chunked\r\n", "HTTP/1.0", .error(400)),
            ("Transfer-Encoding: chunked, gzip\r\n", "HTTP/1.1", .error(400)),
            ("Transfer-Encoding: gzip\r\n", "HTTP/1.1", .error(400)),
            ("Transfer-Encoding: chunked, chunked\r\n", "HTTP/1.1", .error(400)),
            ("Transfer-Encoding: chunked;q=1\r\n", "HTTP/1.1", .error(400)),
            ("Transfer-Encoding:\r\n", "HTTP/1.1", .error(400)),
            ("Transfer-Encoding: \"chunked\"\r\n", "HTTP/1.1", .error(400)),
            ("Transfer-Encoding: identity, chunked\r\n", "HTTP/1.1", .error(501)),
            ("Transfer-Encoding: foo, chunked\r\n", "HTTP/1.1", .error(501)),
        ])
    func requestFraming(_ fields: String, _ version: String, _ expected: HTTPExpectedFraming) throws {
        #expect(try Self.requestFraming(fields, version: version) == expected)
    }

    @Test(
        "CONNECT has no body: the bytes after its head are the tunnel",
        arguments: [
            ("", HTTPExpectedFraming.framing(.none)),
            ("Content-Length: 0\r\n", .framing(.none)),
            ("Content-Length: 5\r\n", .error(400)),
            ("Transfer-Encoding: chunked\r\n", .error(400)),
            ("Content-Length: x\r\n", .error(400)),
        ])
    func connectFraming(_ fields: String, _ expected: HTTPExpectedFraming) throws {
        let head = try HTTPTestSupport.requestHead("CONNECT e.example:443 HTTP/1.1\r\n\(fields)\r\n")
        let framing: HTTPExpectedFraming
        do {
            framing = .framing(try head.bodyFraming())
        } catch {
            framing = .error(error.status)
        }
        #expect(framing == expected)
    }

    @Test(
        "response framing (RFC 9112 §6.3)",
        arguments: [
            ("200 OK", "Content-Length: 5\r\n", "GET", HTTPExpectedFraming.framing(.contentLength(5)), false),
            ("200 OK", "", "GET", .framing(.untilClose), false),
            ("200 OK", "Transfer-Encoding: chunked\r\n", "GET", .framing(.chunked), false),
            ("200 OK", "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", "GET", .framing(.chunked), true),
            ("200 OK", "Transfer-Encoding: gzip, chunked\r\n", "POST", .framing(.chunked), false),
            ("200 OK", "Transfer-Encoding: X-GZIP\r\nTransfer-Encoding: chunked\r\n", "GET", .framing(.chunked), false),
            // Issue 27: not a known list ending in chunked, refused whatever RFC 9112 §6.3 rule 4 allows.
            ("200 OK", "Transfer-Encoding: gzip\r\n", "GET", .error(502), false),
            ("200 OK", "Transfer-Encoding: chunked, identity\r\n", "GET", .error(502), false),
            ("200 OK", "Transfer-Encoding: xchunked\r\nContent-Length: 5\r\n", "GET", .error(502), true),
            ("200 OK", "Transfer-Encoding: identity, chunked\r\n", "GET", .error(502), false),
            ("200 OK", "Transfer-Encoding: br, chunked\r\n", "POST", .error(502), false),
            ("200 OK", "Transfer-Encoding: chunked, identity\r\n", "HEAD", .error(502), false),
            ("304 Not Modified", "Transfer-Encoding: xchunked\r\n", "GET", .error(502), false),
            ("204 No Content", "Content-Length: 5\r\n", "GET", .framing(.none), false),
            ("304 Not Modified", "Content-Length: 5\r\n", "GET", .framing(.none), false),
            ("100 Continue", "", "POST", .framing(.none), false),
            ("101 Switching Protocols", "", "GET", .framing(.none), false),
            ("200 OK", "Content-Length: 5\r\n", "HEAD", .framing(.none), false),
            ("200 OK", "Transfer-Encoding: chunked\r\n", "HEAD", .framing(.none), false),
            ("200 Connection established", "", "CONNECT", .framing(.none), false),
            (
                "407 Proxy Authentication Required", "Content-Length: 3\r\n", "CONNECT", .framing(.contentLength(3)),
                false
            ),
            ("200 OK", "Content-Length: 1, 2\r\n", "GET", .error(502), false),
            ("200 OK", "Content-Length: x\r\n", "GET", .error(502), false),
            ("200 OK", "Content-Length: 7, 7\r\n", "GET", .framing(.contentLength(7)), false),
            ("200 OK", "Transfer-Encoding: chunked, chunked\r\n", "GET", .error(502), false),
            ("200 OK", "Connection: close\r\nContent-Length: 1\r\n", "GET", .framing(.contentLength(1)), true),
        ])
    func responseFraming(
        _ statusLine: String, _ fields: String, _ method: String, _ expected: HTTPExpectedFraming, _ mustClose: Bool
    ) throws {
        let head = try HTTPTestSupport.responseHead("HTTP/1.1 \(statusLine)\r\n\(fields)\r\n")
        let framing: HTTPExpectedFraming
        do {
            framing = .framing(try head.bodyFraming(requestMethod: method))
        } catch {
            framing = .error(error.status)
        }
        #expect(framing == expected)
        #expect(head.connectionMustClose == mustClose)
    }

    @Test("Transfer-Encoding in an HTTP/1.0 response is faulty framing (RFC 9112 §6.1): 502, naming the field")
    func http10ResponseWithTransferEncoding() throws {
        let head = try HTTPTestSupport.responseHead(
            "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n")
        #expect(
            throws: HeadError(
                status: 502,
                reason:
                    "an HTTP/1.0 response cannot use Transfer-Encoding, and this one has Transfer-Encoding \"chunked\"")
        ) {
            try head.bodyFraming(requestMethod: "GET")
        }
        #expect(head.connectionMustClose)
    }

    @Test(
        "a refused response Transfer-Encoding is named in the reason, as the origin sent it",
        arguments: [
            (
                "Transfer-Encoding: chunked, identity\r\n",
                "the response's Transfer-Encoding \"chunked, identity\" does not end in chunked, so a client could find another end of its body"
            ),
            (
                "Transfer-Encoding: xchunked\r\nContent-Length: 5\r\n",
                "the response's Transfer-Encoding \"xchunked\" does not end in chunked, so a client could find another end of its body"
            ),
            (
                "Transfer-Encoding: Identity\r\nTransfer-Encoding: chunked\r\n",
                "the response's Transfer-Encoding \"Identity, chunked\" has \"identity\", not a known transfer coding"
            ),
            (
                "Transfer-Encoding: chunked;x=1\r\n",
                "the response's Transfer-Encoding \"chunked;x=1\" cannot be read: the Transfer-Encoding header gives parameters to chunked"
            ),
        ])
    func refusedTransferEncodingNamed(_ fields: String, _ reason: String) throws {
        let head = try HTTPTestSupport.responseHead("HTTP/1.1 200 OK\r\n\(fields)\r\n")
        #expect(throws: HeadError(status: 502, reason: reason)) { try head.bodyFraming(requestMethod: "GET") }
    }

    @Test(
        "keep-alive (RFC 9112 §9.3)",
        arguments: [
            ("HTTP/1.1", "", true),
            ("HTTP/1.1", "Connection: close\r\n", false),
            ("HTTP/1.1", "Connection: Close\r\n", false),
            ("HTTP/1.1", "Connection: keep-alive, CLOSE\r\n", false),
            ("HTTP/1.1", "Connection: Upgrade\r\nConnection: close\r\n", false),
            ("HTTP/1.1", "Connection: keep-alive\r\n", true),
            ("HTTP/1.1", "Connection: closed\r\n", true),
            ("HTTP/1.1", "Proxy-Connection: close\r\n", true),
            ("HTTP/1.0", "", false),
            ("HTTP/1.0", "Connection: keep-alive\r\n", true),
            ("HTTP/1.0", "Connection: Keep-Alive\r\n", true),
            ("HTTP/1.0", "Connection: foo,keep-alive\r\n", true),
            ("HTTP/1.0", "Connection: keep-alive, close\r\n", false),
            ("HTTP/1.0", "Keep-Alive: timeout=5\r\n", false),
        ])
    func keepAlive(_ version: String, _ fields: String, _ expected: Bool) throws {
        let request = try HTTPTestSupport.requestHead("GET http://e.example/ \(version)\r\n\(fields)\r\n")
        #expect(request.isKeepAlive == expected)
        let response = try HTTPTestSupport.responseHead("\(version) 200 OK\r\n\(fields)\r\n")
        #expect(response.isKeepAlive == expected)
        #expect(response.connectionMustClose == !expected)
    }
}
