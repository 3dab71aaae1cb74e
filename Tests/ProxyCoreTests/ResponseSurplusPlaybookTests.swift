import ATSPolicy
import EventLoop
import Foundation
import LogRecord
import Testing

@testable import ProxyCore

/// Issue 27, item 1: an origin that sends more than its response (in one write, the shape of the
/// server bugs it repros) never answers the next request with the rest. Plain `http://` sessions on
/// scripted streams, so the bytes are exactly the repro's; intercept mode's are in
/// ``InterceptSurplusPlaybookTests``.
@Suite("Plain HTTP sessions, scripted: bytes beyond a response")
struct ResponseSurplusPlaybookTests {
    /// What the review's origins sent after their response: a second response of their own.
    static let smuggled = "HTTP/1.1 200 OK\r\nX-Smuggled: yes\r\nContent-Length: 6\r\n\r\nSPLIT!"
    /// The 44-byte HTML body an origin sent with its answer to a HEAD.
    static let headBody = "<html><body>HEAD has no body</body></html>\r\n"

    /// A response, the bytes the origin wrote after it in the same write, and how the line names its end.
    struct Shape: Sendable, CustomTestStringConvertible {
        var method: String
        var response: String
        var surplus: String
        var framing: String
        var testDescription: String {
            "\(method), \(response.prefix(while: { $0 != "\r" })) + \(surplus.utf8.count) bytes"
        }
    }

    static let shapes = [
        Shape(
            method: "GET", response: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", surplus: smuggled,
            framing: "its Content-Length was 5"),
        Shape(
            method: "HEAD", response: "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 44\r\n\r\n",
            surplus: headBody, framing: "a response to HEAD has no body"),
        Shape(
            method: "GET", response: "HTTP/1.1 204 No Content\r\n\r\n", surplus: smuggled,
            framing: "a 204 response has no body"),
        Shape(
            method: "GET", response: "HTTP/1.1 304 Not Modified\r\nETag: \"1\"\r\n\r\n", surplus: smuggled,
            framing: "a 304 response has no body"),
        Shape(
            method: "GET", response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            surplus: smuggled, framing: "after its last chunk"),
    ]

    /// `response` as the proxy relays it: `Via` added at the end of its head (only: a chunked
    /// body's last chunk ends with an empty line too).
    static func relayed(_ response: String) -> String {
        guard let end = response.range(of: "\r\n\r\n") else { return response }
        return response.replacingCharacters(in: end, with: "\r\nVia: 1.1 atsproxy\r\n\r\n")
    }

    static func request(_ method: String, _ path: String = "/v1/items") -> String {
        "\(method) http://api.example.com\(path) HTTP/1.1\r\nHost: api.example.com\r\n\r\n"
    }

    @Test(
        "the response is delivered as framed, the surplus never; the line says how many bytes; the origin is closed",
        arguments: shapes)
    func surplusInOneWrite(_ shape: Shape) throws {
        let (environment, client, origin) = try ExchangePlaybookTests.forwarded(Self.request(shape.method))
        origin.peerSends(shape.response + shape.surplus)
        environment.playbook.run()
        #expect(
            client.deliveredText == Self.relayed(shape.response), "exactly the response, as framed")
        #expect(!origin.isOpen, "a connection holding bytes beyond the response is not kept")
        #expect(client.isOpen, "the client may go on: its next request gets an origin connection of its own")
        let line = try #require(environment.records.first)
        #expect(line.failure == .responseSurplus)
        #expect(line.action == .allowed)
        let count = shape.surplus.utf8.count
        #expect(
            line.upstreamError?.hasPrefix(
                "the origin sent \(count) bytes beyond the end of its response (\(shape.framing))")
                == true, "\(String(describing: line.upstreamError))")

        client.peerSends(Self.request("GET", "/next"))
        environment.playbook.run()
        #expect(environment.dials.count == 2, "the next request is dialled anew")
        let second = ScriptedStream("origin-2", playbook: environment.playbook)
        try #require(environment.dials.last).connect(second, address: ExchangePlaybookTests.origin)
        environment.playbook.run()
        second.peerSends("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext")
        environment.playbook.run()
        #expect(client.deliveredText.hasSuffix("\r\n\r\nnext"), "\(client.deliveredText)")
        #expect(!client.deliveredText.contains("X-Smuggled"))
        #expect(environment.records.count == 2 && environment.records[1].failure == nil)
    }

    @Test("bytes from an idle origin that came with the next request, their callback not yet run: it is not reused")
    func surplusBeforeReuse() throws {
        let (environment, client, origin) = try ExchangePlaybookTests.forwarded()
        origin.peerSends("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
        environment.playbook.run()
        #expect(environment.records.first?.failure == nil)
        // The next request is read first; the origin's late bytes wait behind it in the loop.
        client.peerSends(Self.request("GET", "/next"))
        origin.peerSends(Self.smuggled)
        environment.playbook.run()
        #expect(!origin.isOpen)
        #expect(environment.dials.count == 2, "a new origin connection for the next request")
        #expect(!client.deliveredText.contains("SPLIT!"))
    }

    @Test("a response that ends exactly where its framing says keeps its origin for the next request")
    func noSurplusKeepsOrigin() throws {
        let (environment, client, origin) = try ExchangePlaybookTests.forwarded(Self.request("HEAD"))
        origin.peerSends("HTTP/1.1 200 OK\r\nContent-Length: 44\r\n\r\n")
        environment.playbook.run()
        #expect(origin.isOpen)
        #expect(environment.records.first?.failure == nil)
        client.peerSends(Self.request("GET"))
        environment.playbook.run()
        #expect(environment.dials.count == 1)
    }
}
