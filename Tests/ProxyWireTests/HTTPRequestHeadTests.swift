import ProxyWire
import Testing

/// A request the proxy must accept, and what it must parse to.
struct HTTPValidRequestCase: Sendable, CustomTestStringConvertible {
    var raw: String
    var method: String
    var target: RequestTarget
    var version: HTTPVersion
    var headers: [String] = []

    var testDescription: String { raw.split(whereSeparator: \.isNewline).first.map(String.init) ?? raw }
}

/// A request the proxy must refuse, with the status and a phrase of the reason.
struct HTTPInvalidRequestCase: Sendable, CustomTestStringConvertible {
    var raw: [UInt8]
    var status: Int
    var phrase: String

    init(_ raw: String, _ status: Int, _ phrase: String) {
        self.raw = Array(raw.utf8)
        self.status = status
        self.phrase = phrase
    }

    init(bytes: [UInt8], _ status: Int, _ phrase: String) {
        self.raw = bytes
        self.status = status
        self.phrase = phrase
    }

    var testDescription: String {
        "\(status) \(phrase): \(String(decoding: raw.prefix(60), as: UTF8.self).debugDescription)"
    }
}

@Suite("Request heads")
struct HTTPRequestHeadTests {
    static let validCases: [HTTPValidRequestCase] = [
        HTTPValidRequestCase(
            raw: "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
            method: "CONNECT", target: .authority(host: "example.com", port: 443), version: .http11,
            headers: ["Host: example.com:443"]),
        HTTPValidRequestCase(
            raw: "CONNECT Example.COM:65535 HTTP/1.1\r\n\r\n",
            method: "CONNECT", target: .authority(host: "example.com", port: 65535), version: .http11),
        HTTPValidRequestCase(
            raw: "CONNECT [2001:DB8::1]:8443 HTTP/1.1\r\nHost: [2001:db8::1]:8443\r\n\r\n",
            method: "CONNECT", target: .authority(host: "2001:db8::1", port: 8443), version: .http11,
            headers: ["Host: [2001:db8::1]:8443"]),
        HTTPValidRequestCase(
            raw: "CONNECT [::ffff:192.0.2.1]:443 HTTP/1.1\r\n\r\n",
            method: "CONNECT", target: .authority(host: "::ffff:192.0.2.1", port: 443), version: .http11),
        HTTPValidRequestCase(
            raw: "CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\n\r\n",
            method: "CONNECT", target: .authority(host: "fe80::1%eth0", port: 443), version: .http11),
        HTTPValidRequestCase(
            raw: "CONNECT 192.0.2.10:1 HTTP/1.0\r\n\r\n",
            method: "CONNECT", target: .authority(host: "192.0.2.10", port: 1), version: .http10),
        HTTPValidRequestCase(
            raw: "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n",
            method: "GET", target: .absolute(scheme: "http", host: "example.com", port: nil, pathAndQuery: "/"),
            version: .http11, headers: ["Host: example.com", "Accept: */*"]),
        HTTPValidRequestCase(
            raw: "GET http://example.com HTTP/1.1\r\n\r\n",
            method: "GET", target: .absolute(scheme: "http", host: "example.com", port: nil, pathAndQuery: "/"),
            version: .http11),
        HTTPValidRequestCase(
            raw: "GET http://example.com:8080/a/b?x=1&y=%20z HTTP/1.1\r\nHost: example.com:8080\r\n\r\n",
            method: "GET",
            target: .absolute(scheme: "http", host: "example.com", port: 8080, pathAndQuery: "/a/b?x=1&y=%20z"),
            version: .http11, headers: ["Host: example.com:8080"]),
        HTTPValidRequestCase(
            raw: "POST HTTPS://API.Example.com:443/v1/items HTTP/1.1\r\nContent-Length: 3\r\n\r\n",
            method: "POST",
            target: .absolute(scheme: "https", host: "api.example.com", port: 443, pathAndQuery: "/v1/items"),
            version: .http11, headers: ["Content-Length: 3"]),
        HTTPValidRequestCase(
            raw: "GET http://example.com?q=1 HTTP/1.1\r\n\r\n",
            method: "GET", target: .absolute(scheme: "http", host: "example.com", port: nil, pathAndQuery: "/?q=1"),
            version: .http11),
        HTTPValidRequestCase(
            raw: "GET http://example.com:/x HTTP/1.1\r\n\r\n",
            method: "GET", target: .absolute(scheme: "http", host: "example.com", port: nil, pathAndQuery: "/x"),
            version: .http11),
        HTTPValidRequestCase(
            raw: "GET http://[::1]:3128/status HTTP/1.0\r\n\r\n",
            method: "GET", target: .absolute(scheme: "http", host: "::1", port: 3128, pathAndQuery: "/status"),
            version: .http10),
        HTTPValidRequestCase(
            raw: "HEAD http://my_host.local./ HTTP/1.0\r\nUser-Agent: test\r\n\r\n",
            method: "HEAD", target: .absolute(scheme: "http", host: "my_host.local.", port: nil, pathAndQuery: "/"),
            version: .http10, headers: ["User-Agent: test"]),
        HTTPValidRequestCase(
            raw: "GET http://198.51.100.7:81/ HTTP/1.1\r\n\r\n",
            method: "GET", target: .absolute(scheme: "http", host: "198.51.100.7", port: 81, pathAndQuery: "/"),
            version: .http11),
        // Leading empty lines are skipped and bare LF ends lines (RFC 9112 §2.2).
        HTTPValidRequestCase(
            raw: "\r\n\nGET http://a.example/ HTTP/1.1\nHost: a.example\n\n",
            method: "GET", target: .absolute(scheme: "http", host: "a.example", port: nil, pathAndQuery: "/"),
            version: .http11, headers: ["Host: a.example"]),
        // Unknown methods are tokens like any other.
        HTTPValidRequestCase(
            raw: "PROPFIND http://dav.example/x HTTP/1.1\r\nDepth: 1\r\n\r\n",
            method: "PROPFIND", target: .absolute(scheme: "http", host: "dav.example", port: nil, pathAndQuery: "/x"),
            version: .http11, headers: ["Depth: 1"]),
        // OWS around values is not part of them; empty values and repeated names are kept.
        HTTPValidRequestCase(
            raw:
                "GET http://e.example/ HTTP/1.1\r\nX-Spaced:   two words \t\r\nX-Empty:\r\nX-Empty: \r\nset-cookie:a=1\r\n\r\n",
            method: "GET", target: .absolute(scheme: "http", host: "e.example", port: nil, pathAndQuery: "/"),
            version: .http11, headers: ["X-Spaced: two words", "X-Empty: ", "X-Empty: ", "set-cookie: a=1"]),
    ]

    @Test("valid requests parse as expected", arguments: validCases)
    func parsesValid(_ testCase: HTTPValidRequestCase) throws {
        let result = HTTPTestSupport.parseRequest(testCase.raw)
        guard case .complete(let head, let leftover) = result else {
            Issue.record("expected a complete head, got \(result)")
            return
        }
        #expect(head.method == testCase.method)
        #expect(head.target == testCase.target)
        #expect(head.version == testCase.version)
        #expect(HTTPTestSupport.pairs(head.headers) == testCase.headers)
        #expect(leftover.isEmpty)
    }

    @Test("byte-at-a-time feeding gives the same result as one piece", arguments: validCases)
    func byteAtATime(_ testCase: HTTPValidRequestCase) {
        let input = HTTPTestSupport.bytes(testCase.raw + "BODY")
        let oneShot = HTTPTestSupport.parseRequest(input)
        #expect(HTTPTestSupport.parseRequestByteByByte(input) == oneShot)
        #expect(HTTPTestSupport.parseRequest(input, pieceSizes: [3, 7, 1, 2]) == oneShot)
        guard case .complete(_, let leftover) = oneShot else {
            Issue.record("expected a complete head, got \(oneShot)")
            return
        }
        #expect(leftover == HTTPTestSupport.bytes("BODY"))
    }

    static let invalidCases: [HTTPInvalidRequestCase] = [
        // Targets a forward proxy cannot serve.
        HTTPInvalidRequestCase(
            "GET /index.html HTTP/1.1\r\nHost: example.com\r\n\r\n", 400,
            "this is a proxy: send the absolute URL (GET http://host/path) or CONNECT host:port"),
        HTTPInvalidRequestCase("OPTIONS * HTTP/1.1\r\n\r\n", 400, "asterisk-form"),
        HTTPInvalidRequestCase(
            "CONNECT http://example.com/ HTTP/1.1\r\n\r\n", 400, "CONNECT needs an authority target"),
        HTTPInvalidRequestCase("CONNECT /x HTTP/1.1\r\n\r\n", 400, "CONNECT needs an authority target"),
        HTTPInvalidRequestCase("CONNECT example.com HTTP/1.1\r\n\r\n", 400, "has no port"),
        HTTPInvalidRequestCase("CONNECT example.com: HTTP/1.1\r\n\r\n", 400, "has no port"),
        HTTPInvalidRequestCase("CONNECT example.com:0 HTTP/1.1\r\n\r\n", 400, "from 1 to 65535"),
        HTTPInvalidRequestCase("CONNECT example.com:65536 HTTP/1.1\r\n\r\n", 400, "from 1 to 65535"),
        HTTPInvalidRequestCase("CONNECT example.com:44x HTTP/1.1\r\n\r\n", 400, "from 1 to 65535"),
        HTTPInvalidRequestCase("CONNECT :443 HTTP/1.1\r\n\r\n", 400, "has no host"),
        HTTPInvalidRequestCase("CONNECT [2001:db8::g]:443 HTTP/1.1\r\n\r\n", 400, "invalid IPv6"),
        HTTPInvalidRequestCase("CONNECT [1:2:3:4:5:6:7:8:9]:443 HTTP/1.1\r\n\r\n", 400, "invalid IPv6"),
        HTTPInvalidRequestCase("CONNECT [1::2::3]:443 HTTP/1.1\r\n\r\n", 400, "invalid IPv6"),
        HTTPInvalidRequestCase("CONNECT [fe80::1%eth0%eth1]:443 HTTP/1.1\r\n\r\n", 400, "invalid IPv6"),
        HTTPInvalidRequestCase("CONNECT [::1:443 HTTP/1.1\r\n\r\n", 400, "closing bracket"),
        HTTPInvalidRequestCase("CONNECT [::1]x:443 HTTP/1.1\r\n\r\n", 400, "not a :port"),
        HTTPInvalidRequestCase("CONNECT 2001:db8::1:443 HTTP/1.1\r\n\r\n", 400, "not in brackets"),
        HTTPInvalidRequestCase("CONNECT user@example.com:443 HTTP/1.1\r\n\r\n", 400, "user@"),
        HTTPInvalidRequestCase("GET example.com:80 HTTP/1.1\r\n\r\n", 400, "only allowed with CONNECT"),
        HTTPInvalidRequestCase("GET example HTTP/1.1\r\n\r\n", 400, "not an absolute http:// or https:// URL"),
        HTTPInvalidRequestCase("GET http://user:secret@example.com/ HTTP/1.1\r\n\r\n", 400, "user@"),
        HTTPInvalidRequestCase("GET ftp://example.com/file HTTP/1.1\r\n\r\n", 400, "only http and https"),
        HTTPInvalidRequestCase("GET http:///path HTTP/1.1\r\n\r\n", 400, "has no host"),
        HTTPInvalidRequestCase("GET http://exa%6dple.com/ HTTP/1.1\r\n\r\n", 400, "percent-encoded"),
        HTTPInvalidRequestCase("GET http://exa$mple.com/ HTTP/1.1\r\n\r\n", 400, "invalid character '$'"),
        HTTPInvalidRequestCase("GET http://2130706433/ HTTP/1.1\r\n\r\n", 400, "dotted quad"),
        HTTPInvalidRequestCase("GET http://127.1/ HTTP/1.1\r\n\r\n", 400, "dotted quad"),
        HTTPInvalidRequestCase("GET http://0x7f.0.0.1/ HTTP/1.1\r\n\r\n", 400, "dotted quad"),
        HTTPInvalidRequestCase("GET http://localhost.0x7f/ HTTP/1.1\r\n\r\n", 400, "dotted quad"),
        HTTPInvalidRequestCase("GET http://010.0.0.1/ HTTP/1.1\r\n\r\n", 400, "dotted quad"),
        HTTPInvalidRequestCase("GET http://256.0.0.1/ HTTP/1.1\r\n\r\n", 400, "dotted quad"),
        HTTPInvalidRequestCase("GET http://example.com:0/ HTTP/1.1\r\n\r\n", 400, "from 1 to 65535"),
        HTTPInvalidRequestCase("GET http://example.com/#top HTTP/1.1\r\n\r\n", 400, "#fragment"),
        // Request-line syntax.
        HTTPInvalidRequestCase("G(T http://example.com/ HTTP/1.1\r\n\r\n", 400, "method contains the invalid byte '('"),
        HTTPInvalidRequestCase("GET  http://example.com/ HTTP/1.1\r\n\r\n", 400, "two spaces"),
        HTTPInvalidRequestCase(" GET http://example.com/ HTTP/1.1\r\n\r\n", 400, "starts with whitespace"),
        HTTPInvalidRequestCase("GET http://example.com/ HTTP/1.1 \r\n\r\n", 400, "characters after HTTP/1.1"),
        HTTPInvalidRequestCase("GET http://example.com/ http/1.1\r\n\r\n", 400, "HTTP version"),
        HTTPInvalidRequestCase("GET http://example.com/ HTTP/1.\r\n\r\n", 400, "HTTP version"),
        HTTPInvalidRequestCase("GET http://example.com/ HTTP/11.1\r\n\r\n", 400, "HTTP version"),
        HTTPInvalidRequestCase("GET http://example.com/\r\n\r\n", 400, "HTTP/0.9"),
        HTTPInvalidRequestCase("GET\r\n\r\n", 400, "no request target"),
        HTTPInvalidRequestCase(
            bytes: Array("GET http://example.com/\u{7F} HTTP/1.1\r\n\r\n".utf8), 400, "invalid byte 0x7F"),
        HTTPInvalidRequestCase(
            bytes: Array("GET http://example.com/".utf8) + [0xC3, 0xA9] + Array(" HTTP/1.1\r\n\r\n".utf8), 400,
            "invalid byte 0xC3"),
        HTTPInvalidRequestCase("GET http://example.com/ HTTP/1.1\rX", 400, "CR that is not followed by LF"),
        // Versions.
        HTTPInvalidRequestCase("GET http://example.com/ HTTP/2.0\r\n\r\n", 505, "HTTP/2 is not supported"),
        HTTPInvalidRequestCase("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505, "HTTP/2 is not supported"),
        HTTPInvalidRequestCase("GET http://example.com/ HTTP/1.2\r\n\r\n", 505, "HTTP/1.2 is not supported"),
        HTTPInvalidRequestCase("GET http://example.com/ HTTP/3.0\r\n\r\n", 505, "HTTP/3 is not supported"),
        HTTPInvalidRequestCase("GET http://example.com/ HTTP/0.9\r\n\r\n", 505, "HTTP/0 is not supported"),
        // Field lines.
        HTTPInvalidRequestCase(
            "GET http://e.com/ HTTP/1.1\r\nHost : e.com\r\n\r\n", 400,
            "header line 1 has whitespace between the field name and the colon"),
        HTTPInvalidRequestCase(
            "GET http://e.com/ HTTP/1.1\r\nHost: e.com\r\nNoColon\r\n\r\n", 400, "header line 2 has no colon"),
        HTTPInvalidRequestCase(
            "GET http://e.com/ HTTP/1.1\r\nA: 1\r\nB: 2\r\nC 3\r\n\r\n", 400, "header line 3 has whitespace"),
        HTTPInvalidRequestCase(
            "GET http://e.com/ HTTP/1.1\r\nX-A: b\r\n  folded\r\n\r\n", 400,
            "header line 2 starts with whitespace (obsolete line folding"),
        HTTPInvalidRequestCase(
            "GET http://e.com/ HTTP/1.1\r\n\tX-A: b\r\n\r\n", 400, "header line 1 starts with whitespace"),
        HTTPInvalidRequestCase("GET http://e.com/ HTTP/1.1\r\n: value\r\n\r\n", 400, "empty field name"),
        HTTPInvalidRequestCase(
            "GET http://e.com/ HTTP/1.1\r\nX\"Y: z\r\n\r\n", 400, "invalid byte '\"' in its field name"),
        HTTPInvalidRequestCase("GET http://e.com/ HTTP/1.1\r\nX-A: a\u{01}b\r\n\r\n", 400, "control byte 0x01"),
        HTTPInvalidRequestCase("GET http://e.com/ HTTP/1.1\r\nX-A: a\u{7F}b\r\n\r\n", 400, "control byte 0x7F"),
        HTTPInvalidRequestCase("GET http://e.com/ HTTP/1.1\r\nX-A: a\u{00}b\r\n\r\n", 400, "control byte 0x00"),
        HTTPInvalidRequestCase("GET http://e.com/ HTTP/1.1\r\nX-A: a\rb\r\n\r\n", 400, "CR that is not followed by LF"),
        // Host fields (RFC 9112 §3.2).
        HTTPInvalidRequestCase(
            "GET http://e.com/ HTTP/1.1\r\nHost: e.com\r\nhost: e.com\r\n\r\n", 400, "more than one Host"),
        HTTPInvalidRequestCase(
            "GET http://e.com/ HTTP/1.1\r\nHost: e com\r\n\r\n", 400, "the Host header has the invalid character 0x20"),
        HTTPInvalidRequestCase(
            "GET http://e.com/ HTTP/1.1\r\nHost: e.com:99999\r\n\r\n", 400, "the Host header has a port"),
        // Not HTTP at all.
        HTTPInvalidRequestCase(
            bytes: [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03], 400, "TLS handshake"),
        HTTPInvalidRequestCase(bytes: [0x00, 0x00, 0x00, 0x00], 400, "this is not an HTTP request"),
        HTTPInvalidRequestCase("SSH-2.0-OpenSSH_9.2\r\n", 400, "no request target"),
    ]

    @Test("invalid requests fail with the expected status and reason", arguments: invalidCases)
    func rejectsInvalid(_ testCase: HTTPInvalidRequestCase) throws {
        let error = try #require(HTTPTestSupport.failure(HTTPTestSupport.parseRequest(testCase.raw)))
        #expect(error.status == testCase.status)
        #expect(error.reason.contains(testCase.phrase), "reason was: \(error.reason)")
        #expect(HTTPTestSupport.parseRequestByteByByte(testCase.raw) == .failed(error))
    }

    @Test("the bytes after the head are returned exactly, however the head was split")
    func leftoverBytes() throws {
        let head = "POST http://e.example/upload HTTP/1.1\r\nContent-Length: 5\r\n\r\n"
        let input = HTTPTestSupport.bytes(head + "helloGET http://e.example/ HTTP/1.1\r\n\r\n")
        for split in 1..<input.count {
            var parser = RequestHeadParser()
            let first = parser.consume(input[..<split])
            let leftover: [UInt8]
            if case .complete(_, let rest) = first {
                leftover = rest + input[split...]
            } else {
                #expect(first == .needMoreData)
                guard case .complete(_, let rest) = parser.consume(input[split...]) else {
                    Issue.record("no complete head for split \(split)")
                    return
                }
                leftover = rest
            }
            #expect(HTTPTestSupport.text(leftover) == "helloGET http://e.example/ HTTP/1.1\r\n\r\n")
        }
    }

    @Test("after a complete head the parser reads the next request on the connection")
    func pipelinedRequests() throws {
        var parser = RequestHeadParser()
        let input = HTTPTestSupport.bytes(
            "GET http://a.example/1 HTTP/1.1\r\n\r\n\r\nGET http://a.example/2 HTTP/1.1\r\n\r\n")
        guard case .complete(let first, let leftover) = parser.consume(input) else {
            Issue.record("first request did not parse")
            return
        }
        #expect(first.target == .absolute(scheme: "http", host: "a.example", port: nil, pathAndQuery: "/1"))
        guard case .complete(let second, let rest) = parser.consume(leftover) else {
            Issue.record("second request did not parse")
            return
        }
        #expect(second.target == .absolute(scheme: "http", host: "a.example", port: nil, pathAndQuery: "/2"))
        #expect(rest.isEmpty)
    }

    @Test("bytes can come straight from a buffer pointer, as libevent hands them over")
    func rawBufferInput() {
        let input = HTTPTestSupport.bytes("GET http://e.example/ HTTP/1.1\r\nHost: e.example\r\n\r\nbody")
        var parser = RequestHeadParser()
        let result = input.withUnsafeBytes { parser.consume($0) }
        #expect(result == HTTPTestSupport.parseRequest(input))
        var scanner = ChunkedBodyScanner()
        let chunked = HTTPTestSupport.bytes("4\r\nbody\r\n0\r\n\r\nnext")
        #expect(
            (try? chunked.withUnsafeBytes { try scanner.scan($0) })
                == ChunkScan(consumed: 14, finished: true, payload: 4))
    }

    @Test("a failed parser keeps failing with the same error")
    func failureIsSticky() {
        var parser = RequestHeadParser()
        let first = parser.consume(HTTPTestSupport.bytes("GET /x HTTP/1.1\r\n\r\n"))
        #expect(HTTPTestSupport.failure(first)?.status == 400)
        #expect(parser.consume(HTTPTestSupport.bytes("GET http://e.com/ HTTP/1.1\r\n\r\n")) == first)
    }

    @Test("header values keep non-UTF-8 bytes exactly")
    func obsTextValue() throws {
        let input =
            HTTPTestSupport.bytes("GET http://e.com/ HTTP/1.1\r\nX-Latin: caf") + [0xE9]
            + HTTPTestSupport.bytes("\r\nX-Utf8: café\r\n\r\n")
        guard case .complete(let head, _) = HTTPTestSupport.parseRequest(input) else {
            Issue.record("request did not parse")
            return
        }
        #expect(head.headers[0].valueBytes == HTTPTestSupport.bytes("caf") + [0xE9])
        #expect(head.headers.first("x-utf8") == "café")
    }
}

@Suite("Request targets")
struct HTTPRequestTargetTests {
    @Test(
        "targets know their connect port and their written form",
        arguments: [
            (RequestTarget.authority(host: "e.example", port: 8443), UInt16(8443), "e.example:8443"),
            (.authority(host: "2001:db8::1", port: 443), 443, "[2001:db8::1]:443"),
            (.absolute(scheme: "http", host: "e.example", port: nil, pathAndQuery: "/a?b"), 80, "http://e.example/a?b"),
            (.absolute(scheme: "https", host: "e.example", port: nil, pathAndQuery: "/"), 443, "https://e.example/"),
            (.absolute(scheme: "https", host: "::1", port: 8443, pathAndQuery: "/"), 8443, "https://[::1]:8443/"),
        ])
    func portAndDescription(_ target: RequestTarget, _ port: UInt16, _ written: String) {
        #expect(target.effectivePort == port)
        #expect(target.description == written)
    }

    @Test(
        "IPv6 literals are checked in full",
        arguments: [
            ("[::]", true), ("[::1]", true), ("[1::]", true), ("[1:2:3:4:5:6:7::]", true), ("[1:2:3:4:5:6:7:8]", true),
            ("[::ffff:1.2.3.4]", true), ("[1:2:3:4:5:6:1.2.3.4]", true), ("[fe80::1%25en0]", true),
            ("[fe80::1%en0]", true),
            ("[]", false), ("[:]", false), ("[:::]", false), ("[1:2:3:4:5:6:7:8:9]", false),
            ("[1:2:3:4:5:6:7:8::]", false),
            ("[12345::]", false), ("[1:]", false), ("[:1]", false), ("[1.2.3.4]", false), ("[::1.2.3]", false),
            ("[1:2:3:4:5:6:7:1.2.3.4]", false), ("[fe80::1%]", false), ("[fe80::1%25]", true), ("[fe80::1%a%b]", false),
            ("[v1.x]", false), ("[::1.2.3.4:5]", false),
        ])
    func ipv6(_ host: String, _ valid: Bool) {
        let result = HTTPTestSupport.parseRequest("CONNECT \(host):443 HTTP/1.1\r\n\r\n")
        if valid {
            guard case .complete = result else {
                Issue.record("refused \(host): \(result)")
                return
            }
        } else {
            #expect(HTTPTestSupport.failure(result)?.status == 400)
        }
    }
}
