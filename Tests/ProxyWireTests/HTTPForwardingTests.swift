import ProxyWire
import Testing

@Suite("Forwarding rewrite")
struct HTTPForwardingTests {
    static func forwarded(_ request: String, via: String = "atsproxy") throws -> String {
        HTTPTestSupport.text(try HTTPTestSupport.requestHead(request).headForOrigin(via: via))
    }

    @Test("hop-by-hop fields go, including those Connection names; Transfer-Encoding stays")
    func removesHopByHop() throws {
        let request = """
            POST http://example.com:8080/p?q=1 HTTP/1.1\r
            Host: example.com:8080\r
            Connection: keep-alive, X-Secret, x-other\r
            X-Secret: 1\r
            X-Other: 2\r
            Proxy-Connection: keep-alive\r
            Keep-Alive: timeout=300\r
            Proxy-Authorization: Basic dXNlcjpwYXNz\r
            Proxy-Authenticate: Basic\r
            TE: trailers\r
            Trailer: X-Checksum\r
            Upgrade: h2c\r
            Transfer-Encoding: chunked\r
            Accept: */*\r
            \r

            """
        #expect(
            try Self.forwarded(request) == """
                POST /p?q=1 HTTP/1.1\r
                Host: example.com:8080\r
                Transfer-Encoding: chunked\r
                Accept: */*\r
                Via: 1.1 atsproxy\r
                \r

                """)
    }

    @Test("Connection cannot remove the fields that frame the body or name the origin")
    func protectedFields() throws {
        let request =
            "POST http://e.example/ HTTP/1.1\r\nHost: e.example\r\nConnection: Content-Length, Host, Transfer-Encoding\r\nContent-Length: 3\r\n\r\n"
        #expect(
            try Self.forwarded(request)
                == "POST / HTTP/1.1\r\nHost: e.example\r\nContent-Length: 3\r\nVia: 1.1 atsproxy\r\n\r\n")
    }

    @Test(
        "Host is added first when missing",
        arguments: [
            (
                "GET http://example.com HTTP/1.1\r\nAccept: x\r\n\r\n",
                "GET / HTTP/1.1\r\nHost: example.com\r\nAccept: x\r\nVia: 1.1 atsproxy\r\n\r\n"
            ),
            (
                "GET http://EXAMPLE.com:8080/a HTTP/1.1\r\n\r\n",
                "GET /a HTTP/1.1\r\nHost: example.com:8080\r\nVia: 1.1 atsproxy\r\n\r\n"
            ),
            (
                "GET https://[2001:db8::1]:8443/?x HTTP/1.1\r\n\r\n",
                "GET /?x HTTP/1.1\r\nHost: [2001:db8::1]:8443\r\nVia: 1.1 atsproxy\r\n\r\n"
            ),
            (
                "CONNECT example.com:443 HTTP/1.1\r\n\r\n",
                "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nVia: 1.1 atsproxy\r\n\r\n"
            ),
            (
                "CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\n\r\n",
                "CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\nHost: [fe80::1%25eth0]:443\r\nVia: 1.1 atsproxy\r\n\r\n"
            ),
        ])
    func addsHost(_ request: String, _ expected: String) throws {
        #expect(try Self.forwarded(request) == expected)
    }

    @Test(
        "a Host naming the target is left alone",
        arguments: [
            "Host: EXAMPLE.com",
            "Host: example.com:80",
            "host: example.com",
        ])
    func keepsMatchingHost(_ hostLine: String) throws {
        let request = "GET http://example.com/x HTTP/1.1\r\nAccept: a\r\n\(hostLine)\r\n\r\n"
        #expect(
            try Self.forwarded(request) == "GET /x HTTP/1.1\r\nAccept: a\r\n\(hostLine)\r\nVia: 1.1 atsproxy\r\n\r\n")
    }

    @Test(
        "a Host naming another authority is replaced by the target's (RFC 9112 §3.2.2)",
        arguments: [
            "Host: other.example",
            "Host: example.com:8080",
            "Host: ",
        ])
    func replacesMismatchedHost(_ hostLine: String) throws {
        let request = "GET http://example.com/x HTTP/1.1\r\nAccept: a\r\n\(hostLine)\r\n\r\n"
        #expect(
            try Self.forwarded(request)
                == "GET /x HTTP/1.1\r\nHost: example.com\r\nAccept: a\r\nVia: 1.1 atsproxy\r\n\r\n")
    }

    @Test("Via is appended to an existing Via, with the version the proxy received")
    func via() throws {
        #expect(
            try Self.forwarded(
                "GET http://e.example/ HTTP/1.1\r\nHost: e.example\r\nVia: 1.0 fred\r\nVia: 1.1 p.example (Apache/1.1)\r\n\r\n"
            )
                == "GET / HTTP/1.1\r\nHost: e.example\r\nVia: 1.0 fred\r\nVia: 1.1 p.example (Apache/1.1), 1.1 atsproxy\r\n\r\n"
        )
        #expect(
            try Self.forwarded("GET http://e.example/ HTTP/1.0\r\n\r\n", via: "proxy.local")
                == "GET / HTTP/1.1\r\nHost: e.example\r\nVia: 1.0 proxy.local\r\n\r\n")
    }

    @Test("identical Content-Length values become one line")
    func collapsesContentLength() throws {
        #expect(
            try Self.forwarded(
                "POST http://e.example/ HTTP/1.1\r\nHost: e.example\r\nContent-Length: 5, 5\r\nX: y\r\nContent-Length: 5\r\n\r\n"
            )
                == "POST / HTTP/1.1\r\nHost: e.example\r\nContent-Length: 5\r\nX: y\r\nVia: 1.1 atsproxy\r\n\r\n")
    }

    @Test("field values are forwarded byte for byte")
    func obsTextForwarded() throws {
        let input =
            HTTPTestSupport.bytes("GET http://e.example/ HTTP/1.1\r\nHost: e.example\r\nX-Latin: caf") + [0xE9]
            + HTTPTestSupport.bytes("\r\n\r\n")
        guard case .complete(let head, _) = HTTPTestSupport.parseRequest(input) else {
            Issue.record("request did not parse")
            return
        }
        let expected =
            HTTPTestSupport.bytes("GET / HTTP/1.1\r\nHost: e.example\r\nX-Latin: caf") + [0xE9]
            + HTTPTestSupport.bytes("\r\nVia: 1.1 atsproxy\r\n\r\n")
        #expect(head.headForOrigin(via: "atsproxy") == expected)
    }

    @Test("fields added by the proxy cannot inject lines")
    func noInjection() throws {
        var head = try HTTPTestSupport.requestHead("GET http://e.example/ HTTP/1.1\r\nHost: e.example\r\n\r\n")
        head.headers.add(name: "X-Note", value: "a\r\nEvil: 1")
        head.headers.add(name: "Bad Name", value: "v")
        #expect(
            HTTPTestSupport.text(head.headForOrigin(via: "p\r\nX: y"))
                == "GET / HTTP/1.1\r\nHost: e.example\r\nX-Note: a  Evil: 1\r\nVia: 1.1 p  X: y\r\n\r\n")
    }

    @Test("responses lose hop-by-hop fields and gain Via")
    func response() throws {
        let head = try HTTPTestSupport.responseHead(
            """
            HTTP/1.0 200 Fine\r
            Connection: close, X-Foo\r
            X-Foo: a\r
            Keep-Alive: timeout=5\r
            Content-Length: 3\r
            Proxy-Authenticate: Basic realm="x"\r
            Set-Cookie: a=1\r
            Set-Cookie: b=2\r
            \r

            """)
        #expect(
            HTTPTestSupport.text(head.serialized(addingVia: "atsproxy")) == """
                HTTP/1.1 200 Fine\r
                Content-Length: 3\r
                Set-Cookie: a=1\r
                Set-Cookie: b=2\r
                Via: 1.0 atsproxy\r
                \r

                """)
    }

    @Test("a response with Transfer-Encoding loses its Content-Length (RFC 9112 §6.3 rule 3)")
    func responseTransferEncodingWins() throws {
        let head = try HTTPTestSupport.responseHead(
            "HTTP/1.1 200\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\nVia: 1.1 origin-cache\r\n\r\n")
        #expect(
            HTTPTestSupport.text(head.serialized(addingVia: "atsproxy"))
                == "HTTP/1.1 200 \r\nTransfer-Encoding: chunked\r\nVia: 1.1 origin-cache, 1.1 atsproxy\r\n\r\n")
    }

    @Test("a serialized response parses back to the same status and fields")
    func responseRoundTrip() throws {
        let head = try HTTPTestSupport.responseHead(
            "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n\r\n")
        let reparsed = try HTTPTestSupport.responseHead(HTTPTestSupport.text(head.serialized(addingVia: "atsproxy")))
        #expect(reparsed.status == 404)
        #expect(reparsed.reason == "Not Found")
        #expect(
            HTTPTestSupport.pairs(reparsed.headers) == [
                "Content-Type: text/plain", "Content-Length: 0", "Via: 1.1 atsproxy",
            ])
    }
}
