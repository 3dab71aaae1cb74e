import ProxyWire
import Testing

/// Inside an intercepted connection every request must name the origin's authority, the one its
/// connection was judged for, and its URL is logged with that authority whatever the request says.
@Suite("The authority of requests inside an intercepted connection")
struct RequestOriginAuthorityTests {
    static let origin = RequestOrigin(scheme: "https", host: "API.Example.com", port: 443)

    static func head(_ text: String, origin: RequestOrigin = origin) throws -> RequestHead {
        var parser = RequestHeadParser(origin: origin)
        guard case .complete(let head, _) = parser.consume(Array(text.utf8)) else {
            throw HeadNotParsed(text: text)
        }
        return head
    }

    struct HeadNotParsed: Error { var text: String }

    /// (head, the origin's port, the refusal's start or nil, the URL logged)
    static let cases: [(head: String, port: UInt16, refusal: String?, url: String)] = [
        ("GET /v1?a=1 HTTP/1.1\r\nHost: api.example.com\r\n\r\n", 443, nil, "https://api.example.com/v1?a=1"),
        // Case, and the default port written or not.
        ("GET / HTTP/1.1\r\nHost: API.EXAMPLE.COM:443\r\n\r\n", 443, nil, "https://api.example.com/"),
        ("GET / HTTP/1.1\r\nHost: api.example.com:8443\r\n\r\n", 8443, nil, "https://api.example.com:8443/"),
        ("GET /no-host HTTP/1.0\r\n\r\n", 443, nil, "https://api.example.com/no-host"),
        // A Host without a port on a CONNECT to another port: the request goes to that port, logged so.
        ("GET /x HTTP/1.1\r\nHost: api.example.com\r\n\r\n", 8443, nil, "https://api.example.com:8443/x"),
        (
            "GET /x HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n", 8443, "the Host header names api.example.com:443,",
            "https://api.example.com:8443/x"
        ),
        (
            "GET / HTTP/1.1\r\nHost: api.example.com:80\r\n\r\n", 443, "the Host header names api.example.com:80,",
            "https://api.example.com/"
        ),
        (
            "GET /x HTTP/1.1\r\nHost: evil.example\r\n\r\n", 443,
            "the Host header names evil.example, but this connection is to api.example.com,",
            "https://api.example.com/x"
        ),
        // absolute-form: its authority, and the Host beside it.
        (
            "GET https://api.example.com/abs HTTP/1.1\r\nHost: api.example.com\r\n\r\n", 443, nil,
            "https://api.example.com/abs"
        ),
        ("GET https://api.example.com:443/abs HTTP/1.1\r\n\r\n", 443, nil, "https://api.example.com/abs"),
        // Over this TLS whatever the scheme says: a missing port is the connection's 443.
        ("GET http://api.example.com/abs HTTP/1.1\r\n\r\n", 443, nil, "https://api.example.com/abs"),
        (
            "GET http://evil.example/steal HTTP/1.1\r\nHost: api.example.com\r\n\r\n", 443,
            "the request target names evil.example,", "https://api.example.com/steal"
        ),
        (
            "GET https://api.example.com/abs HTTP/1.1\r\nHost: evil.example\r\n\r\n", 443,
            "the Host header names evil.example,", "https://api.example.com/abs"
        ),
        (
            "GET https://api.example.com.evil.example/ HTTP/1.1\r\n\r\n", 443,
            "the request target names api.example.com.evil.example,", "https://api.example.com/"
        ),
    ]

    @Test("a request naming another authority is refused, saying which; the URL is the connection's", arguments: cases)
    func authority(_ text: String, _ port: UInt16, _ refusal: String?, _ url: String) throws {
        let origin = RequestOrigin(scheme: "https", host: Self.origin.host, port: port)
        let head = try Self.head(text, origin: origin)
        let found = origin.foreignAuthority(in: head)
        if let refusal {
            #expect(found?.hasPrefix(refusal) == true, "\(String(describing: found))")
        } else {
            #expect(found == nil, "\(String(describing: found))")
        }
        #expect(origin.url(of: head.target) == url)
    }

    @Test("IPv6: brackets in the Host and the URL, none in the origin's host")
    func ipv6() throws {
        let origin = RequestOrigin(scheme: "https", host: "2001:DB8::1", port: 443)
        let same = try Self.head("GET /a HTTP/1.1\r\nHost: [2001:db8::1]:443\r\n\r\n", origin: origin)
        #expect(origin.foreignAuthority(in: same) == nil)
        #expect(origin.url(of: same.target) == "https://[2001:db8::1]/a")
        let other = try Self.head("GET /a HTTP/1.1\r\nHost: [2001:db8::2]\r\n\r\n", origin: origin)
        #expect(origin.foreignAuthority(in: other)?.hasPrefix("the Host header names [2001:db8::2],") == true)
    }

    @Test(
        "the exact authorities a caller may take unparsed are the ones foreignAuthority(named:) accepts",
        arguments: [
            ("api.example.com", UInt16(443), ["api.example.com:443", "api.example.com"]),
            ("API.Example.com", 8443, ["api.example.com:8443", "api.example.com"]),
            ("2001:DB8::1", 443, ["[2001:db8::1]:443", "[2001:db8::1]"]),
            ("example.com.", 443, ["example.com.:443", "example.com."]),
            // An SNI may end in a numeric label; no authority may: a request naming it is refused.
            ("127.1", 443, []),
            ("10.0.0.010", 443, []),
        ])
    func exactAuthorities(host: String, port: UInt16, exact: [String]) {
        let origin = RequestOrigin(scheme: "https", host: host, port: port)
        #expect(origin.exactAuthorities == exact)
        #expect(origin.exactAuthorities.allSatisfy { origin.foreignAuthority(named: $0) == nil })
    }
}
