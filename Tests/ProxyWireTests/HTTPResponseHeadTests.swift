import ProxyWire
import Testing

@Suite("Response heads")
struct HTTPResponseHeadTests {
    @Test(
        "valid status lines parse",
        arguments: [
            ("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", HTTPVersion.http11, 200, "OK", ["Content-Length: 0"]),
            ("HTTP/1.0 404 Not Found\r\n\r\n", .http10, 404, "Not Found", []),
            ("HTTP/1.1 204 \r\n\r\n", .http11, 204, "", []),
            ("HTTP/1.1 200\r\n\r\n", .http11, 200, "", []),
            ("HTTP/1.1 999 Custom\tReason  \r\n\r\n", .http11, 999, "Custom\tReason  ", []),
            ("\r\nHTTP/1.1 100 Continue\n\n", .http11, 100, "Continue", []),
            (
                "HTTP/1.1 301 Moved\r\nLocation: http://e.example/\r\nSet-Cookie: a\r\nSet-Cookie: b\r\n\r\n", .http11,
                301, "Moved",
                ["Location: http://e.example/", "Set-Cookie: a", "Set-Cookie: b"]
            ),
        ])
    func parsesValid(_ raw: String, _ version: HTTPVersion, _ status: Int, _ reason: String, _ headers: [String]) throws
    {
        let input = HTTPTestSupport.bytes(raw + "body")
        let result = HTTPTestSupport.parseResponse(input)
        guard case .complete(let head, let leftover) = result else {
            Issue.record("expected a complete head, got \(result)")
            return
        }
        #expect(head.version == version)
        #expect(head.status == status)
        #expect(head.reason == reason)
        #expect(HTTPTestSupport.pairs(head.headers) == headers)
        #expect(leftover == HTTPTestSupport.bytes("body"))
        #expect(HTTPTestSupport.parseResponse(input, pieceSizes: Array(repeating: 1, count: input.count)) == result)
    }

    @Test(
        "invalid responses fail with 502 and the reason",
        arguments: [
            ("HTTP/1.1 20 OK\r\n\r\n", "three digits"),
            ("HTTP/1.1 099 Low\r\n\r\n", "three digits from 100 to 999"),
            ("HTTP/1.1 2000 OK\r\n\r\n", "three digits followed by a space"),
            ("HTTP/1.1 2x0 OK\r\n\r\n", "three digits"),
            ("HTTP/1.1\r\n\r\n", "incomplete"),
            ("HTTP/1.1 \r\n\r\n", "incomplete"),
            ("HTTP/1.1  200 OK\r\n\r\n", "three digits"),
            ("HTTP/2 200\r\n\r\n", "HTTP/2"),
            ("HTTP/1.2 200 OK\r\n\r\n", "HTTP/1.2"),
            ("HTTP/1.1200 OK\r\n\r\n", "no space after HTTP/1.1"),
            ("http/1.1 200 OK\r\n\r\n", "did not answer with HTTP"),
            ("SSH-2.0-OpenSSH_9.2\r\n", "did not answer with HTTP"),
            ("HTTX/1.1 200 OK\r\n\r\n", "does not start with an HTTP version"),
            ("HTTP/1.1 200 O\u{01}K\r\n\r\n", "control byte 0x01"),
            (
                "HTTP/1.1 200 OK\r\nServer : x\r\n\r\n",
                "header line 1 has whitespace between the field name and the colon"
            ),
            ("HTTP/1.1 200 OK\r\nA: b\r\n c\r\n\r\n", "header line 2 starts with whitespace"),
            ("HTTP/1.1 200 OK\rX", "CR that is not followed by LF"),
        ])
    func rejectsInvalid(_ raw: String, _ phrase: String) throws {
        let error = try #require(HTTPTestSupport.failure(HTTPTestSupport.parseResponse(raw)))
        #expect(error.status == 502)
        #expect(error.statusPhrase == "Bad Gateway")
        #expect(error.reason.contains(phrase), "reason was: \(error.reason)")
    }

    @Test("TLS from the origin fails at the first byte")
    func tlsFromOrigin() throws {
        var parser = ResponseHeadParser()
        let error = try #require(HTTPTestSupport.failure(parser.consume([0x15])))
        #expect(error.status == 502)
        #expect(error.reason.contains("TLS"))
    }

    @Test("an interim response is followed by the final one on the same parser")
    func interimThenFinal() throws {
        var parser = ResponseHeadParser()
        let input = HTTPTestSupport.bytes("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        guard case .complete(let interim, let leftover) = parser.consume(input) else {
            Issue.record("interim response did not parse")
            return
        }
        #expect(interim.status == 100)
        guard case .complete(let final, let body) = parser.consume(leftover) else {
            Issue.record("final response did not parse")
            return
        }
        #expect(final.status == 200)
        #expect(body == HTTPTestSupport.bytes("ok"))
    }
}
