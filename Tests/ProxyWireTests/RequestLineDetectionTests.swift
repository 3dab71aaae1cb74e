import ProxyWire
import Testing

@Suite("Request lines in a tunnel's first bytes")
struct RequestLineDetectionTests {
    @Test(
        "HTTP/1 request lines in any target form are recognised; other protocols are not",
        arguments: [
            ("GET /path?q=1 HTTP/1.1\r\nHost: a\r\n\r\n", true),
            ("POST http://a/b HTTP/1.0\r\n", true),
            ("OPTIONS * HTTP/1.1\r\n", true),
            ("GET /path HTTP/1.1", false),  // the line has not ended
            ("SSH-2.0-OpenSSH_9.2\r\n", false),
            ("220 smtp.example ESMTP\r\n", false),
            ("GET  /two-spaces HTTP/1.1\r\n", false),
            ("GET / HTTP/2.0\r\n", false),
            ("\u{16}\u{03}\u{01}\u{00}\u{05}", false),
            ("", false),
        ])
    func detection(_ text: String, _ expected: Bool) {
        #expect(RequestLineDetection.startsWithRequestLine(Array(text.utf8)) == expected)
    }
}

/// Intercepted TLS without ALPN: the first bytes say HTTP as soon as they begin as a request does,
/// however malformed the rest; only a byte no request begins with says another protocol.
@Suite("First bytes inside intercepted TLS without ALPN")
struct InterceptedStartTests {
    static let cases: [(bytes: [UInt8], expected: RequestLineDetection.Start)] = [
        (Array("GET /v1 HTTP/1.1\r\n".utf8), .http),
        // Each of these is HTTP the parser refuses (400, 501, 505), not another protocol.
        (Array("GET  /v1 HTTP/1.1\r\n".utf8), .http),
        (Array("GET\t/v1 HTTP/1.1\r\n".utf8), .http),
        (Array(String(repeating: "A", count: 33).utf8) + Array(" / HTTP/1.1\r\n".utf8), .http),
        (Array("GET /v1 http/1.1\r\n".utf8), .http),
        (Array("GET /v1 HTTP/1.2\r\n".utf8), .http),
        (Array("GET /".utf8), .http),
        // A leading empty line, which the parser skips.
        (Array("\r\nGET / HTTP/1.1\r\n".utf8), .http),
        (Array("\nGET / HTTP/1.1\r\n".utf8), .http),
        // Prefixes still arriving.
        ([], .undecided),
        (Array("\r".utf8), .undecided),
        (Array("GE".utf8), .undecided),
        (Array(String(repeating: "A", count: 40).utf8), .undecided),
        // Positive evidence of something else.
        ([0x00] + Array("GET / HTTP/1.1\r\n".utf8), .otherProtocol),
        ([0x00, 0x01] + Array("binary protocol\n".utf8), .otherProtocol),
        ([0x16, 0x03, 0x01, 0x00, 0x05], .otherProtocol),
        ([0x80, 0x20], .otherProtocol),
        (Array(" GET / HTTP/1.1\r\n".utf8), .otherProtocol),
        (Array("\tGET".utf8), .otherProtocol),
        (Array("\rX".utf8), .otherProtocol),
        (Array("PING\r\n".utf8), .otherProtocol),
        (Array("CONNECT\n".utf8), .otherProtocol),
        (Array("G\u{0}ET".utf8), .otherProtocol),
        (Array("<stream:stream>".utf8), .otherProtocol),
    ]

    @Test("a token and SP/HTAB, or an empty line, is HTTP; a prefix waits; any other byte is not", arguments: cases)
    func classification(_ bytes: [UInt8], _ expected: RequestLineDetection.Start) {
        #expect(RequestLineDetection.start(of: bytes) == expected, "\(bytes)")
    }
}
