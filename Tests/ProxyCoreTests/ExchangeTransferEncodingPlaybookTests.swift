import ATSPolicy
import EventLoop
import Foundation
import LogRecord
import Testing

@testable import ProxyCore

/// Issue 27, item 5, in a plain `http://` session on scripted streams: a response whose
/// Transfer-Encoding is not a known list ending in chunked is refused with 502 before any of it
/// reaches the client, as Squid refuses it; relayed, a client that honours chunked anywhere in the
/// field would read the bytes after the chunked body as a second response.
@Suite("Plain HTTP sessions, scripted: response Transfer-Encoding")
struct ExchangeTransferEncodingPlaybookTests {
    /// The review's repro for `value`: a chunked body whose last chunk is followed by a smuggled
    /// response (`xchunked` came with a Content-Length covering both).
    static func response(_ value: String) -> String {
        let body = "5\r\nhello\r\n0\r\n\r\n" + ResponseSurplusPlaybookTests.smuggled
        let length = value == "xchunked" ? "Content-Length: \(body.utf8.count)\r\n" : ""
        return "HTTP/1.1 200 OK\r\nTransfer-Encoding: \(value)\r\n\(length)\r\n\(body)"
    }

    @Test(
        "refused with 502 naming the field; nothing of the response reaches the client; the origin is dropped",
        arguments: ["chunked, identity", "xchunked", "gzip", "identity, chunked"])
    func refused(_ value: String) throws {
        let (environment, client, origin) = try ExchangePlaybookTests.forwarded()
        origin.peerSends(Self.response(value))
        environment.playbook.run()
        #expect(client.deliveredText.hasPrefix("HTTP/1.1 502 Bad Gateway\r\n"), "\(client.deliveredText)")
        #expect(!client.deliveredText.contains("hello") && !client.deliveredText.contains("SPLIT!"))
        #expect(client.deliveredText.contains("Transfer-Encoding \"\(value)\""), "the answer names the field")
        #expect(!origin.isOpen)
        let line = try #require(environment.records.first)
        #expect(line.action == .failed && line.failure == .badResponse)
        #expect(
            line.upstreamError?.contains("Transfer-Encoding \"\(value)\"") == true,
            "\(String(describing: line.upstreamError))")
    }

    @Test("an HTTP/1.0 response with Transfer-Encoding is faulty framing (RFC 9112 §6.1): 502")
    func http10() throws {
        let (environment, client, origin) = try ExchangePlaybookTests.forwarded()
        origin.peerSends("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        environment.playbook.run()
        #expect(client.deliveredText.hasPrefix("HTTP/1.1 502 Bad Gateway\r\n"), "\(client.deliveredText)")
        #expect(
            environment.records.first?.upstreamError?.contains("HTTP/1.0 response cannot use Transfer-Encoding") == true
        )
    }

    @Test("gzip, chunked is a known list ending in chunked: relayed as it came, the origin kept")
    func knownList() throws {
        let (environment, client, origin) = try ExchangePlaybookTests.forwarded()
        let response = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
        origin.peerSends(response)
        environment.playbook.run()
        #expect(client.deliveredText == ResponseSurplusPlaybookTests.relayed(response))
        #expect(origin.isOpen)
        #expect(environment.records.first?.failure == nil)
    }
}
