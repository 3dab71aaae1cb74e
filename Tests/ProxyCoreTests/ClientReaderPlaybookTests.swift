import EventLoop
import Testing

@testable import ProxyCore

/// Who handles the client's bytes between readers (``ClientReader/none``): while a plain request's
/// origin is dialled, nobody reads, and what the client does meanwhile waits for the exchange.
@Suite("The client while nobody reads, scripted")
struct ClientReaderPlaybookTests {
    /// A session whose request is complete and whose origin is being dialled.
    static func dialling(_ sent: String) throws -> (ScriptedEnvironment, ClientSession, client: ScriptedStream) {
        let environment = try ScriptedEnvironment(policyXML: ExchangePlaybookTests.arbitraryLoads)
        let client = ScriptedStream("client", playbook: environment.playbook)
        let session = environment.startSession(client: client)
        client.peerSends(sent)
        environment.playbook.run()
        try #require(environment.dials.count == 1)
        if case .none = session.reader {} else { Issue.record("the session reads the client while it dials") }
        return (environment, session, client)
    }

    @Test("bytes behind the head are not read while the origin is dialled, even when the client is woken")
    func bytesWaitWhileDialling() throws {
        // What follows the head would be a bad request head if the session read it now.
        let (environment, _, client) = try Self.dialling(ExchangePlaybookTests.request + "XYZ\r\n\r\n")
        client.noteReadable()
        environment.playbook.run()
        #expect(client.delivered.isEmpty, "\(client.deliveredText)")
        #expect(client.isOpen && environment.records.isEmpty)
        #expect(client.availableBytes == 7, "the bytes stay buffered for the next reader")
    }

    @Test("a client that ends right behind its request still gets the answer, then the connection closes")
    func endWhileDialling() throws {
        let environment = try ScriptedEnvironment(policyXML: ExchangePlaybookTests.arbitraryLoads)
        let client = ScriptedStream("client", playbook: environment.playbook)
        _ = environment.startSession(client: client)
        client.peerSends(ExchangePlaybookTests.request)
        client.peerEnds()
        environment.playbook.run()
        let dial = try #require(environment.dials.first)
        #expect(client.isOpen, "the end is noted for the exchange, not taken as the client going away")
        let origin = ScriptedStream("origin", playbook: environment.playbook)
        dial.connect(origin, address: ExchangePlaybookTests.origin)
        environment.playbook.run()
        origin.peerSends("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
        environment.playbook.run()
        #expect(client.deliveredText.hasSuffix("\r\n\r\nhello"), "\(client.deliveredText)")
        #expect(!client.isOpen)
        #expect(environment.records.first?.status == 200)
    }
}
