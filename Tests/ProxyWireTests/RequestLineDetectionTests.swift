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
