import ProxyWire
import Testing

/// What each real capture (Fixtures/tls/capture.py) must parse to: the values OpenSSL printed
/// for the session it negotiated.
struct CaptureExpectation: Sendable, CustomTestStringConvertible {
    let scenario: String
    let clientLegacyVersion: UInt16
    let clientHighestVersion: UInt16
    let clientALPN: [String]
    let selectedVersion: UInt16
    let cipherSuite: UInt16
    let serverALPN: String?
    /// The ServerHello carries extended_master_secret (only ever before TLS 1.3).
    let serverEMSExtension: Bool
    let helloRetryRequested: Bool

    var testDescription: String { scenario }

    static let all = [
        // TLS 1.3: ALPN is in EncryptedExtensions, so the ServerHello cannot show it.
        CaptureExpectation(
            scenario: "tls13", clientLegacyVersion: 0x0303, clientHighestVersion: 0x0304,
            clientALPN: ["h2", "http/1.1"], selectedVersion: 0x0304, cipherSuite: 0x1302,
            serverALPN: nil, serverEMSExtension: false, helloRetryRequested: false),
        CaptureExpectation(
            scenario: "tls12-ecdhe", clientLegacyVersion: 0x0303, clientHighestVersion: 0x0303,
            clientALPN: ["h2", "http/1.1"], selectedVersion: 0x0303, cipherSuite: 0xC02F,
            serverALPN: "h2", serverEMSExtension: true, helloRetryRequested: false),
        CaptureExpectation(
            scenario: "tls12-rsa", clientLegacyVersion: 0x0303, clientHighestVersion: 0x0303,
            clientALPN: ["h2", "http/1.1"], selectedVersion: 0x0303, cipherSuite: 0x009C,
            serverALPN: "http/1.1", serverEMSExtension: true, helloRetryRequested: false),
        CaptureExpectation(
            scenario: "tls10", clientLegacyVersion: 0x0301, clientHighestVersion: 0x0301,
            clientALPN: ["http/1.1"], selectedVersion: 0x0301, cipherSuite: 0xC013,
            serverALPN: "http/1.1", serverEMSExtension: true, helloRetryRequested: false),
        CaptureExpectation(
            scenario: "tls13-hrr", clientLegacyVersion: 0x0303, clientHighestVersion: 0x0304,
            clientALPN: ["h2"], selectedVersion: 0x0304, cipherSuite: 0x1302,
            serverALPN: nil, serverEMSExtension: false, helloRetryRequested: true),
    ]
}

@Suite("TLS hellos from real OpenSSL captures")
struct TLSCaptureTests {
    @Test("ClientHello", arguments: CaptureExpectation.all)
    func clientHello(_ expected: CaptureExpectation) throws {
        let state = Scan.whole(try TLSCaptures.bytes(expected.scenario + "-client"), .clientToServer)
        let hello = try #require(state.clientHello, "\(state)")
        #expect(hello.legacyVersion == expected.clientLegacyVersion)
        #expect(hello.highestVersion == expected.clientHighestVersion)
        #expect(hello.serverName == "www.example.com")
        #expect(hello.alpnProtocols == expected.clientALPN)
        #expect(hello.supportsExtendedMasterSecret)
        #expect(!hello.isSSLv2Compatible)
        #expect(hello.cipherSuites.contains(expected.cipherSuite))
        // Decoded lists are filled exactly when their extension was sent. OpenSSL leaves out
        // signature_algorithms below TLS 1.2 (it is new in RFC 5246 §7.4.1.4.1) and
        // supported_groups when no (EC)DHE suite is offered (RFC 8422 §4).
        #expect(hello.signatureAlgorithms.isEmpty == !hello.extensionTypes.contains(13))
        #expect(hello.supportedGroups.isEmpty == !hello.extensionTypes.contains(10))
        #expect(hello.extensionTypes.contains(13) == (expected.scenario != "tls10"))
        #expect(hello.extensionTypes.contains(10) == (expected.scenario != "tls12-rsa"))
        for decoded: UInt16 in [0, 16, 23] {
            #expect(hello.extensionTypes.contains(decoded))
        }
        #expect(hello.extensionTypes.contains(43) == (expected.clientHighestVersion == 0x0304))
    }

    @Test("ServerHello", arguments: CaptureExpectation.all)
    func serverHello(_ expected: CaptureExpectation) throws {
        let state = Scan.whole(try TLSCaptures.bytes(expected.scenario + "-server"), .serverToClient)
        let hello = try #require(state.serverHello, "\(state)")
        #expect(hello.selectedVersion == expected.selectedVersion)
        #expect(tlsVersionName(hello.selectedVersion) == tlsVersionName(expected.selectedVersion))
        #expect(hello.cipherSuite == expected.cipherSuite)
        #expect(hello.alpnProtocol == expected.serverALPN)
        #expect(hello.extendedMasterSecret == expected.serverEMSExtension)
        #expect(hello.negotiatesExtendedMasterSecret)
        #expect(!hello.isHelloRetryRequest)
        #expect(hello.helloRetryRequested == expected.helloRetryRequested)
        // RFC 8446 §4.1.3: a TLS 1.3 server still says 1.2 in legacy_version.
        #expect(hello.legacyVersion == min(expected.selectedVersion, 0x0303))
    }

    @Test("TLS 1.3 captures name their versions")
    func versionNames() throws {
        let server = try #require(Scan.whole(try TLSCaptures.bytes("tls13-server"), .serverToClient).serverHello)
        #expect(tlsVersionName(server.selectedVersion) == "TLSv1.3")
        #expect(tlsVersionName(server.legacyVersion) == "TLSv1.2")
        let old = try #require(Scan.whole(try TLSCaptures.bytes("tls10-server"), .serverToClient).serverHello)
        #expect(tlsVersionName(old.selectedVersion) == "TLSv1.0")
    }

    @Test("HelloRetryRequest: the client's first hello had a key share only for X25519, the server takes only P-256")
    func helloRetryRequest() throws {
        let client = try #require(
            Scan.whole(try TLSCaptures.bytes("tls13-hrr-client"), .clientToServer).clientHello)
        #expect(client.supportedGroups == [0x001D, 0x0017])  // x25519, secp256r1

        // The scanner reads past the HelloRetryRequest (and the dummy change_cipher_spec after it)
        // and reports nothing until the real ServerHello is complete.
        let capture = try TLSCaptures.bytes("tls13-hrr-server")
        let hrrRecordLength = 5 + (Int(capture[3]) << 8 | Int(capture[4]))
        var scanner = TLSHelloScanner(direction: .serverToClient)
        #expect(scanner.feed(capture[..<hrrRecordLength]) == .needMoreData)
        #expect(scanner.feed(capture[hrrRecordLength..<(hrrRecordLength + 6)]) == .needMoreData)
        let hello = try #require(scanner.feed(capture[(hrrRecordLength + 6)...]).serverHello)
        #expect(hello.helloRetryRequested)
        #expect(!hello.isHelloRetryRequest)
        #expect(scanner.state == .serverHello(hello))
    }

    @Test("a server that shares no version with the client answers with a protocol_version alert")
    func alertCapture() throws {
        let client = try #require(
            Scan.whole(try TLSCaptures.bytes("alert-protocol-version-client"), .clientToServer).clientHello)
        #expect(client.supportedVersions == [0x0304])
        let state = Scan.whole(try TLSCaptures.bytes("alert-protocol-version-server"), .serverToClient)
        #expect(state == .failed(reason: "the server sent a TLS alert: fatal protocol_version"))
    }

    @Test("the wrong direction's capture fails, naming what arrived", arguments: ["tls13", "tls12-ecdhe"])
    func wrongDirection(_ scenario: String) throws {
        let asServer = Scan.whole(try TLSCaptures.bytes(scenario + "-client"), .serverToClient)
        #expect(
            asServer
                == .failed(
                    reason: "expected a ServerHello (handshake type 2) but got client_hello (handshake type 1)"))
        let asClient = Scan.whole(try TLSCaptures.bytes(scenario + "-server"), .clientToServer)
        #expect(
            asClient
                == .failed(
                    reason: "expected a ClientHello (handshake type 1) but got server_hello (handshake type 2)"))
    }
}
