import ProxyWire
import Testing

/// Requests inside an intercepted TLS connection come as an origin server gets them: origin-form
/// targets, made absolute with the Host field's authority, or the connection's server without one.
@Suite("Origin-form requests inside an intercepted connection")
struct HTTPOriginFormTests {
    static let origin = RequestOrigin(scheme: "https", host: "api.example.com", port: 443)

    static let acceptedHeads: [(head: String, target: String)] = [
        ("GET /v1/items?page=2 HTTP/1.1\r\nHost: api.example.com\r\n\r\n", "https://api.example.com/v1/items?page=2"),
        ("GET / HTTP/1.1\r\nHost: api.example.com:8443\r\n\r\n", "https://api.example.com:8443/"),
        // The Host field names the origin the device meant, whatever the TLS server name.
        ("POST /upload HTTP/1.1\r\nHost: cdn.example.net\r\n\r\n", "https://cdn.example.net/upload"),
        ("GET /no-host HTTP/1.0\r\n\r\n", "https://api.example.com/no-host"),
        // absolute-form is still understood (RFC 9112 §3.2.2: servers must accept it).
        ("GET https://api.example.com/abs HTTP/1.1\r\nHost: api.example.com\r\n\r\n", "https://api.example.com/abs"),
    ]

    @Test("origin-form targets are made absolute", arguments: acceptedHeads)
    func accepted(_ head: String, _ target: String) throws {
        var parser = RequestHeadParser(origin: Self.origin)
        guard case .complete(let parsed, _) = parser.consume(Array(head.utf8)) else {
            Issue.record("not parsed: \(head)")
            return
        }
        #expect(parsed.target.description == target)
    }

    static let refusedHeads: [String] = [
        "GET /a#frag HTTP/1.1\r\nHost: api.example.com\r\n\r\n",
        "GET /two HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n",
        "GET /bad HTTP/1.1\r\nHost: bad host\r\n\r\n",
    ]

    @Test("a fragment, two Host fields or a bad Host is a 400 inside the connection too", arguments: refusedHeads)
    func refused(_ head: String) {
        var parser = RequestHeadParser(origin: Self.origin)
        guard case .failed = parser.consume(Array(head.utf8)) else {
            Issue.record("accepted: \(head)")
            return
        }
    }

    @Test("without an origin, the proxy still refuses origin-form")
    func proxyRefusesOriginForm() {
        var parser = RequestHeadParser()
        guard case .failed(let error) = parser.consume(Array("GET /x HTTP/1.1\r\nHost: a\r\n\r\n".utf8)) else {
            Issue.record("origin-form accepted by the proxy")
            return
        }
        #expect(error.reason.contains("this is a proxy"))
    }
}
