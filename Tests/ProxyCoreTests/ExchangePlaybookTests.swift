import ATSPolicy
import EventLoop
import Foundation
import LogRecord
import Testing

@testable import ProxyCore

/// Plain `http://` sessions driven by scripted streams and the test's clock: the exchange's head
/// rewriting, keep-alive reuse, and its three ways to end badly, with no socket and no sleep.
@Suite("Plain HTTP sessions, scripted")
struct ExchangePlaybookTests {
    static let arbitraryLoads = "<key>NSAllowsArbitraryLoads</key><true/>"
    static let origin = try! SocketAddress(parsing: "203.0.113.9:80")
    static let request = "GET http://api.example.com/v1/items HTTP/1.1\r\nHost: api.example.com\r\n\r\n"

    /// A session whose first request reached a connected origin.
    static func forwarded(
        _ request: String = request
    ) throws -> (ScriptedEnvironment, client: ScriptedStream, origin: ScriptedStream) {
        let environment = try ScriptedEnvironment(policyXML: arbitraryLoads)
        let client = ScriptedStream("client", playbook: environment.playbook)
        _ = environment.startSession(client: client)
        client.peerSends(request)
        environment.playbook.run()
        let dial = try #require(environment.dials.first)
        #expect(dial.host == "api.example.com" && dial.port == 80 && dial.address == nil)
        let origin = ScriptedStream("origin", playbook: environment.playbook)
        dial.connect(origin, address: Self.origin)
        environment.playbook.run()
        return (environment, client, origin)
    }

    @Test("keep-alive: origin form and Via go up, the answer comes back, the next request reuses the origin")
    func keepAlive() throws {
        let (environment, client, origin) = try Self.forwarded()
        #expect(origin.deliveredText.hasPrefix("GET /v1/items HTTP/1.1\r\n"), "\(origin.deliveredText)")
        #expect(origin.deliveredText.contains("Via: 1.1 atsproxy\r\n"))
        origin.peerSends("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
        environment.playbook.run()
        #expect(client.deliveredText.hasSuffix("\r\n\r\nhello"))
        let first = try #require(environment.records.first)
        #expect(first.status == 200 && first.action == .allowed)
        #expect(first.upstreamAddress == "203.0.113.9:80")
        #expect(first.bytesDown == Int64(client.delivered.count))

        client.peerSends(Self.request)
        environment.playbook.run()
        #expect(environment.dials.count == 1, "the idle origin is reused")
        #expect(origin.deliveredText.components(separatedBy: "GET /v1/items").count == 3, "two requests on one origin")
    }

    @Test("an origin that says nothing for the idle timeout: 504 with the limit in words")
    func silentOrigin() throws {
        let (environment, client, origin) = try Self.forwarded()
        try #require(environment.idleWatches.last).comeDue()
        environment.playbook.run()
        #expect(client.deliveredText.hasPrefix("HTTP/1.1 504 Gateway Timeout"), "\(client.deliveredText)")
        #expect(!origin.isOpen)
        #expect(environment.records.first?.upstreamError == "the origin did not answer within 300 s")
    }

    @Test("an origin that ends half-way through its body: the client is reset, and the line says why")
    func truncatedBody() throws {
        let (environment, client, origin) = try Self.forwarded()
        origin.peerSends("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly some")
        origin.peerEnds()
        environment.playbook.run()
        #expect(!client.isOpen && client.wasReset)
        let record = try #require(environment.records.first)
        #expect(
            record.upstreamError
                == "the response was cut off after 9 body bytes of 100 (its Content-Length): the origin closed the connection"
        )
        #expect(record.status == 200)
    }

    @Test("a request body that cannot be framed: 400 before any response, and the origin is dropped")
    func unframableBody() throws {
        let (environment, client, origin) = try Self.forwarded(
            "POST http://api.example.com/upload HTTP/1.1\r\nHost: api.example.com\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"
        )
        environment.playbook.run()
        #expect(client.deliveredText.hasPrefix("HTTP/1.1 400"), "\(client.deliveredText)")
        #expect(!origin.isOpen)
        #expect(environment.records.first?.upstreamError?.hasPrefix("bad request body:") == true)
    }

    @Test("where the policy forbids cleartext: Apple's words, and no dial at all")
    func forbidden() throws {
        let environment = try ScriptedEnvironment(policyXML: "")
        let client = ScriptedStream("client", playbook: environment.playbook)
        _ = environment.startSession(client: client)
        client.peerSends(Self.request)
        environment.playbook.run()
        #expect(environment.dials.isEmpty)
        #expect(client.deliveredText.hasPrefix("HTTP/1.1 403"))
        #expect(environment.records.first?.action == .blocked)
    }
}
