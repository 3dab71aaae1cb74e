import ProxyWire
import Testing

/// CA Issuers URLs as iOS fetches them (http only), and their answers read with a bound.
@Suite("CA Issuers URLs and answers")
struct CAIssuersFetchTests {
    @Test(
        "URLs: http only, host, port and path",
        arguments: [
            ("http://pki.example.test/inter.der", "pki.example.test", 80, "/inter.der"),
            ("HTTP://PKI.Example.test:8080/a/b.p7c?x=1", "pki.example.test", 8080, "/a/b.p7c?x=1"),
            ("http://[2001:db8::1]:81/c.crt", "2001:db8::1", 81, "/c.crt"),
            ("http://127.0.0.1", "127.0.0.1", 80, "/"),
        ] as [(String, String, Int, String)])
    func parses(text: String, host: String, port: Int, path: String) throws {
        let url = try #require(CAIssuersURL(text))
        #expect(url.host == host)
        #expect(Int(url.port) == port)
        #expect(url.path == path)
        #expect(String(decoding: url.request, as: UTF8.self).hasPrefix("GET \(path) HTTP/1.0\r\n"))
    }

    @Test(
        "what iOS would not fetch is no URL",
        arguments: [
            "https://pki.example.test/inter.der", "ldap://ldap.example.test/cn=CA", "http://", "http://:80/",
            "http://user@pki.example.test/", "http://pki.example.test:99999/", "http://pki.example.test/a b",
            "http://[2001:db8::1/", "ftp://pki.example.test/x",
        ])
    func refuses(text: String) {
        #expect(CAIssuersURL(text) == nil)
    }

    @Test("the Host field names the port unless it is 80, IPv6 in brackets")
    func hostField() throws {
        let request = String(decoding: try #require(CAIssuersURL("http://[2001:db8::1]:81/c")).request, as: UTF8.self)
        #expect(request.contains("\r\nHost: [2001:db8::1]:81\r\n"))
        let plain = String(decoding: try #require(CAIssuersURL("http://a.test/c")).request, as: UTF8.self)
        #expect(plain.contains("\r\nHost: a.test\r\n"))
    }

    @Test("an answer by Content-Length, in pieces")
    func contentLength() {
        var reader = CAIssuersResponseReader()
        #expect(reader.consume(Array("HTTP/1.1 200 OK\r\nContent-Le".utf8)) == .needMoreData)
        #expect(reader.consume(Array("ngth: 4\r\n\r\nab".utf8)) == .needMoreData)
        #expect(reader.consume(Array("cdEXTRA".utf8)) == .complete(Array("abcd".utf8)))
    }

    @Test("an answer until the close")
    func untilClose() {
        var reader = CAIssuersResponseReader()
        #expect(reader.consume(Array("HTTP/1.0 200 OK\r\n\r\nxyz".utf8)) == .needMoreData)
        #expect(reader.end() == .complete(Array("xyz".utf8)))
    }

    @Test(
        "refusals: not 200, too large, cut short, chunked, not HTTP",
        arguments: [
            ("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", "404"),
            ("HTTP/1.1 200 OK\r\nContent-Length: 70000\r\n\r\n", "at most 65536"),
            ("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "closed after 3 of 10"),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "chunks"),
            ("SSH-2.0-OpenSSH_9.2\r\n\r\n", "not HTTP"),
        ])
    func refusals(answer: String, words: String) {
        var reader = CAIssuersResponseReader()
        var state = reader.consume(Array(answer.utf8))
        if state == .needMoreData { state = reader.end() }
        guard case .failed(let reason) = state else {
            Issue.record("expected a failure, got \(state)")
            return
        }
        #expect(reason.contains(words), "\(reason)")
    }

    @Test("a body that runs past the bound without a length is refused as it comes")
    func unboundedBody() {
        var reader = CAIssuersResponseReader()
        _ = reader.consume(Array("HTTP/1.0 200 OK\r\n\r\n".utf8))
        let state = reader.consume([UInt8](repeating: 0x41, count: CAIssuersResponseReader.maximumBody + 1))
        #expect(state == .failed("the answer is over 65536 bytes"))
    }
}
