import ProxyWire
import Testing

/// The fields decoded from ClientHello and ServerHello extensions.
@Suite("TLS hello fields")
struct TLSHelloFieldTests {
    private func clientHello(_ configure: (inout ClientHelloBuilder) -> Void) throws -> ClientHello {
        var builder = ClientHelloBuilder()
        configure(&builder)
        let state = Scan.whole(builder.record, .clientToServer)
        return try #require(state.clientHello, "\(state)")
    }

    private func serverHello(_ configure: (inout ServerHelloBuilder) -> Void) throws -> ServerHello {
        var builder = ServerHelloBuilder()
        configure(&builder)
        let state = Scan.whole(builder.record, .serverToClient)
        return try #require(state.serverHello, "\(state)")
    }

    @Test("every decoded ClientHello field, GREASE included, in the order sent")
    func allClientFields() throws {
        let hello = try clientHello {
            $0.cipherSuites = [0x2A2A, 0x1301, 0xC02B]
            $0.extensions = [
                Wire.ext(0x3A3A, []),
                Wire.sniExtension("api.Example-1.com"),
                Wire.ext(23, []),
                Wire.ext(10, Wire.vector(2, Wire.uint16s([0x4A4A, 0x001D, 0x0017]))),
                Wire.ext(13, Wire.vector(2, Wire.uint16s([0x0403, 0x0804]))),
                Wire.alpnExtension(["h2", "http/1.1"]),
                Wire.ext(43, Wire.vector(1, Wire.uint16s([0x5A5A, 0x0304, 0x0303]))),
            ]
        }
        #expect(
            hello
                == ClientHello(
                    legacyVersion: 0x0303,
                    supportedVersions: [0x5A5A, 0x0304, 0x0303],
                    cipherSuites: [0x2A2A, 0x1301, 0xC02B],
                    serverName: "api.Example-1.com",
                    alpnProtocols: ["h2", "http/1.1"],
                    extensionTypes: [0x3A3A, 0, 23, 10, 13, 16, 43],
                    supportsExtendedMasterSecret: true,
                    signatureAlgorithms: [0x0403, 0x0804],
                    supportedGroups: [0x4A4A, 0x001D, 0x0017]))
        #expect(hello.highestVersion == 0x0304)
        #expect(hello.cipherSuites.filter { !isGREASE($0) } == [0x1301, 0xC02B])
    }

    @Test("highestVersion ignores GREASE and falls back to legacy_version")
    func highestVersion() throws {
        #expect(try clientHello { $0.extensions = nil }.highestVersion == 0x0303)
        let onlyGREASE = try clientHello {
            $0.legacyVersion = 0x0302
            $0.extensions = [Wire.ext(43, Wire.vector(1, Wire.uint16s([0x0A0A])))]
        }
        #expect(onlyGREASE.highestVersion == 0x0302)
        let draft = try clientHello { $0.extensions = [Wire.ext(43, Wire.vector(1, Wire.uint16s([0x7F1C, 0x0303])))] }
        #expect(draft.highestVersion == 0x7F1C)
        #expect(tlsVersionName(draft.highestVersion) == "0x7f1c")
    }

    @Test("a hello without an extensions block (TLS 1.2 and older) is fine")
    func noExtensions() throws {
        let hello = try clientHello {
            $0.legacyVersion = 0x0300
            $0.sessionID = []
            $0.extensions = nil
        }
        #expect(hello == ClientHello(legacyVersion: 0x0300, cipherSuites: [0x1301, 0x1302, 0xC02F]))
        let server = try serverHello {
            $0.extensions = nil
            $0.legacyVersion = 0x0303
            $0.cipherSuite = 0x009C
        }
        #expect(server == ServerHello(legacyVersion: 0x0303, selectedVersion: 0x0303, cipherSuite: 0x009C))
        #expect(!server.negotiatesExtendedMasterSecret)
    }

    @Test("an empty extensions block is fine too")
    func emptyExtensions() throws {
        #expect(try clientHello { $0.extensions = [] }.extensionTypes.isEmpty)
    }

    @Test("server_name entries of other types are skipped")
    func otherNameTypes() throws {
        let hello = try clientHello {
            $0.extensions = [
                Wire.ext(0, Wire.vector(2, [7] + Wire.vector(2, [1, 2]) + [0] + Wire.vector(2, Array("a.b".utf8))))
            ]
        }
        #expect(hello.serverName == "a.b")
        let withoutHost = try clientHello { $0.extensions = [Wire.ext(0, Wire.vector(2, [7] + Wire.vector(2, [1])))] }
        #expect(withoutHost.serverName == nil)
    }

    @Test("ALPN names with bytes outside printable ASCII are escaped, losslessly")
    func alpnEscaping() throws {
        let hello = try clientHello {
            $0.extensions = [Wire.ext(16, Wire.vector(2, Wire.vector(1, [0x68, 0x0A, 0x5C, 0xFF])))]
        }
        #expect(hello.alpnProtocols == [#"h\x0a\x5c\xff"#])
    }

    @Test("ServerHello fields: supported_versions overrides legacy_version; ALPN; EMS")
    func serverFields() throws {
        let hello = try serverHello {
            $0.cipherSuite = 0xC030
            $0.extensions = [Wire.ext(65281, [0]), Wire.ext(23, []), Wire.alpnExtension(["h2"]), Wire.ext(11, [1, 0])]
        }
        #expect(
            hello
                == ServerHello(
                    legacyVersion: 0x0303, selectedVersion: 0x0303, cipherSuite: 0xC030,
                    extensionTypes: [65281, 23, 16, 11], extendedMasterSecret: true, alpnProtocol: "h2"))
        #expect(hello.negotiatesExtendedMasterSecret)

        let tls13 = try serverHello { _ in }
        #expect(tls13.selectedVersion == 0x0304)
        #expect(tls13.legacyVersion == 0x0303)
        #expect(!tls13.extendedMasterSecret)
        #expect(tls13.negotiatesExtendedMasterSecret)

        let draft = try serverHello { $0.extensions = [Wire.ext(43, Wire.uint16(0x7F17))] }
        #expect(draft.negotiatesExtendedMasterSecret)
    }

    @Test("a lone HelloRetryRequest is recognised but not reported")
    func helloRetryRequestIsNotAResult() {
        #expect(Scan.whole(ServerHelloBuilder.helloRetryRequest.record, .serverToClient) == .needMoreData)
        // The HRR random with one bit changed is an ordinary ServerHello.
        var almost = ServerHelloBuilder.helloRetryRequest
        almost.random[31] ^= 1
        let hello = Scan.whole(almost.record, .serverToClient).serverHello
        #expect(hello?.isHelloRetryRequest == false)
        #expect(hello?.helloRetryRequested == false)
    }
}
