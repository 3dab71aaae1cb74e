import ATSPolicy
import Foundation
import TLSInspection
import TLSTestSupport
import Testing

/// A client ``TLSStream`` and a server one talking over in-memory queues: whole handshakes,
/// refusals with the alert on the wire, per-stream certificates and shared contexts, no socket.
@Suite("TLS streams back to back: handshakes", .startsProcesses(timeLimit: .seconds(60)))
struct TLSStreamHandshakeTests {
    /// One way to shake hands, and what the client must see.
    struct Handshake: Sendable, CustomTestStringConvertible {
        var name: String
        var clientMaximum: TLSVersion
        var ecdsaLeaf: Bool
        var version: TLSVersion
        var cipher: UInt16
        var testDescription: String { name }
    }

    static let handshakes: [Handshake] = [
        // TLS 1.3: the server's order picks TLS_AES_128_GCM_SHA256, as Apple's list does.
        Handshake(name: "TLS 1.3, ECDSA leaf", clientMaximum: .tls13, ecdsaLeaf: true, version: .tls13, cipher: 0x1301),
        Handshake(name: "TLS 1.3, RSA leaf", clientMaximum: .tls13, ecdsaLeaf: false, version: .tls13, cipher: 0x1301),
        // TLS 1.2: ECDHE-ECDSA-AES256-GCM-SHA384 first for an ECDSA leaf, the RSA twin for an RSA one.
        Handshake(name: "TLS 1.2, ECDSA leaf", clientMaximum: .tls12, ecdsaLeaf: true, version: .tls12, cipher: 0xC02C),
        Handshake(name: "TLS 1.2, RSA leaf", clientMaximum: .tls12, ecdsaLeaf: false, version: .tls12, cipher: 0xC030),
    ]

    @Test("a full handshake: the client reads version, suite, chain and a user-installed root", arguments: handshakes)
    func handshake(_ row: Handshake) throws {
        let fixture = try StreamFixture.shared.get()
        let clientContext = try fixture.clientContext { $0.maximumVersion = row.clientMaximum }
        let serverContext = try TLSServerContext(credentials: row.ecdsaLeaf ? fixture.ecdsaLeaf : fixture.rsaLeaf)
        let pair = try StreamPair(client: clientContext, server: serverContext)

        let (client, server) = pair.handshake()
        #expect(client == .complete && server == .complete, "client \(client), server \(server)")
        #expect(pair.client.isHandshakeComplete && pair.server.isHandshakeComplete)
        let observed = try #require(pair.client.outcome(now: Int64(Date.now.timeIntervalSince1970)).observed)
        #expect(observed.tlsVersion == row.version)
        #expect(observed.cipherSuite == CipherSuite(id: row.cipher), "\(String(describing: observed.cipherSuite))")
        #expect(observed.chain.map(\.subject) == ["CN=example.com", "CN=root"], "the leaf, then the anchor")
        #expect(observed.trust == .userInstalledRoot)
        #expect(observed.extendedMasterSecret == true)
        // The server agrees, and saw the name the client asked for.
        #expect(pair.server.negotiatedVersion == row.version)
        #expect(pair.server.negotiatedCipher == CipherSuite(id: row.cipher))
        #expect(pair.server.serverName == "example.com")
        #expect(pair.server.outcome(now: 0).observed == nil, "a server has no server facts to judge")
        #expect(pair.wire.client.unread == 0 && pair.wire.server.unread == 0, "no bytes left over")
    }

    /// Version ranges with nothing in common: each side must fail, typed, and the server's alert
    /// must reach the client.
    struct Refusal: Sendable, CustomTestStringConvertible {
        var name: String
        var client: ClosedRange<TLSVersion>
        var server: ClosedRange<TLSVersion>
        var serverWords: String
        var testDescription: String { name }
    }

    static let refusals: [Refusal] = [
        Refusal(
            name: "a TLS 1.2-only client, a TLS 1.3-only server", client: .tls12 ... .tls12, server: .tls13 ... .tls13,
            serverWords: "unsupported protocol"),
        Refusal(
            name: "a TLS 1.3-only client, a TLS 1.2-only server", client: .tls13 ... .tls13, server: .tls12 ... .tls12,
            serverWords: "unsupported protocol"),
    ]

    @Test(
        "no common version: both sides fail with OpenSSL's words, and the alert is flushed to the client",
        arguments: refusals)
    func refusal(_ row: Refusal) throws {
        let fixture = try StreamFixture.shared.get()
        let clientContext = try fixture.clientContext {
            $0.minimumVersion = row.client.lowerBound
            $0.maximumVersion = row.client.upperBound
        }
        let serverContext = try TLSServerContext(versions: row.server, credentials: fixture.ecdsaLeaf)
        let pair = try StreamPair(client: clientContext, server: serverContext)

        let (client, server) = pair.handshake()
        guard case .failed(let serverError) = server, case .failed(let clientError) = client else {
            Issue.record("client \(client), server \(server)")
            return
        }
        #expect(serverError.kind == .refused && serverError.reason.contains(row.serverWords), "\(serverError)")
        #expect(clientError.kind == .refused && clientError.reason.contains("alert protocol version"), "\(clientError)")
        // What the server sent is one fatal protocol_version alert record, and the client read it all.
        let sent = pair.wire.server.sent
        #expect(sent.first == 0x15 && sent.suffix(2) == [0x02, 0x46] && sent.count == 7, "\(sent)")
        #expect(pair.wire.client.unread == 0)
        // After a fatal error: no close_notify, and no second try.
        pair.server.shutdown()
        #expect(pair.wire.server.sent == sent)
        #expect(throws: TLSStreamError.self) { try pair.server.handshake() }
    }

    @Test("a TLS 1.3 server sends no session tickets: nothing follows the client's Finished")
    func noTickets() throws {
        let fixture = try StreamFixture.shared.get()
        let pair = try StreamPair(
            client: fixture.clientContext(), server: TLSServerContext(credentials: fixture.ecdsaLeaf))
        #expect(try pair.client.handshake() == .needsBytes)  // ClientHello
        #expect(try pair.server.handshake() == .needsBytes)  // ServerHello ... Finished
        #expect(try pair.client.handshake() == .complete)  // Finished
        let sent = pair.wire.server.sent.count
        #expect(try pair.server.handshake() == .complete)
        // OpenSSL's default is two NewSessionTicket messages, written right here.
        #expect(pair.wire.server.sent.count == sent, "the server wrote \(pair.wire.server.sent.count - sent) bytes")
    }

    @Test("many streams share one client and one server context, interleaved, and each has its own session")
    func sharedContexts() throws {
        let fixture = try StreamFixture.shared.get()
        let clientContext = try fixture.clientContext()
        let serverContext = try TLSServerContext(credentials: fixture.ecdsaLeaf)
        let pairs = try (0..<24).map { _ in try StreamPair(client: clientContext, server: serverContext) }
        // One step of every pair in turn, as streams on one loop advance.
        for _ in 0..<4 {
            for pair in pairs {
                for stream in [pair.client, pair.server] where !stream.isHandshakeComplete {
                    _ = try stream.handshake()
                }
            }
        }
        for (index, pair) in pairs.enumerated() {
            #expect(pair.client.isHandshakeComplete && pair.server.isHandshakeComplete, "pair \(index)")
            try pair.client.write(Array("pair \(index)".utf8))
            #expect(try pair.server.readAvailable().bytes == Array("pair \(index)".utf8))
        }
    }

    /// What a client offers in ALPN, and what the intercepting server's context must agree to.
    static let applicationProtocols: [(offered: [String], selected: String?)] = [
        (["h2", "http/1.1"], "http/1.1"),
        (["http/1.1"], "http/1.1"),
        (["h2"], nil),
        (["spdy/3", "http/1.0"], nil),
        ([], nil),
    ]

    @Test(
        "ALPN: the server context agrees to http/1.1 when offered and to nothing otherwise",
        arguments: applicationProtocols)
    func applicationProtocol(_ offered: [String], _ selected: String?) throws {
        let fixture = try StreamFixture.shared.get()
        let pair = try StreamPair(
            client: fixture.clientContext(), server: TLSServerContext(credentials: fixture.ecdsaLeaf))
        if !offered.isEmpty { try pair.client.offerApplicationProtocols(offered) }
        #expect(pair.handshake() == (.complete, .complete), "no overlap is no refusal")
        #expect(pair.client.selectedApplicationProtocol == selected)
        #expect(pair.server.selectedApplicationProtocol == selected)
    }

    @Test("a stream's own certificate replaces its context's for that stream only")
    func perStreamCertificate() throws {
        let fixture = try StreamFixture.shared.get()
        let clientContext = try fixture.clientContext()
        for serverContext in [try TLSServerContext(credentials: fixture.ecdsaLeaf), try TLSServerContext()] {
            let other = try StreamPair(client: clientContext, server: serverContext, credentials: fixture.otherLeaf)
            #expect(other.handshake() == (.complete, .complete))
            let observed = try #require(other.client.outcome(now: 0).observed)
            #expect(observed.chain.first?.subject == "CN=other")
        }
        let shared = try TLSServerContext(credentials: fixture.ecdsaLeaf)
        let plain = try StreamPair(client: clientContext, server: shared)
        #expect(plain.handshake() == (.complete, .complete))
        #expect(try #require(plain.client.outcome(now: 0).observed).chain.first?.subject == "CN=example.com")
    }

    @Test("what cannot make a stream is refused when it is made, in words")
    func misuse() throws {
        let fixture = try StreamFixture.shared.get()
        let wire = LinkedTransports()
        let noCertificate = #expect(throws: TLSError.self) {
            try TLSStream(role: .server(credentials: nil), context: TLSServerContext(), transport: wire.server)
        }
        #expect(noCertificate?.description.contains("needs a certificate and key") == true)
        #expect(throws: TLSError.self) {
            try TLSStream(
                role: .client(serverName: nil), context: TLSServerContext(credentials: fixture.rsaLeaf),
                transport: wire.client)
        }
        #expect(throws: TLSError.self) {
            try TLSStream(role: .server(credentials: nil), context: fixture.clientContext(), transport: wire.server)
        }
        #expect(throws: TLSError.self, "TLS 1.1 is no device-side version") {
            try TLSServerContext(versions: .tls11 ... .tls13)
        }
        let mismatched = #expect(throws: TLSError.self) {
            try ServerCredentials(chain: fixture.rsaLeaf.chain, key: fixture.ecdsaLeaf.key)
        }
        #expect(mismatched?.description.contains("not the leaf's") == true, "\(String(describing: mismatched))")
    }
}
