import ProxyWire
import Testing

/// Every length is checked against its container; a lie fails with the field named.
@Suite("Malformed TLS hellos")
struct TLSMalformedHelloTests {
    private static func failure(client body: [UInt8]) -> String? {
        Scan.whole(Wire.record(Wire.handshake(type: 1, body)), .clientToServer).failureReason
    }

    private static func failure(server body: [UInt8]) -> String? {
        Scan.whole(Wire.record(Wire.handshake(type: 2, body)), .serverToClient).failureReason
    }

    private static func failure(clientExtensions: [[UInt8]]) -> String? {
        var builder = ClientHelloBuilder()
        builder.extensions = clientExtensions
        return failure(client: builder.body)
    }

    private static func failure(serverExtensions: [[UInt8]]) -> String? {
        var builder = ServerHelloBuilder()
        builder.extensions = serverExtensions
        return failure(server: builder.body)
    }

    /// The ClientHello body up to (not including) the cipher_suites vector.
    private static let clientPrefix = Wire.uint16(0x0303) + [UInt8](repeating: 0, count: 32) + [0]

    @Test("cipher_suites")
    func cipherSuites() {
        #expect(
            Self.failure(client: Self.clientPrefix + [0, 7] + [UInt8](repeating: 0, count: 7) + [1, 0])
                == "malformed ClientHello: cipher_suites length 7 is odd")
        #expect(
            Self.failure(client: Self.clientPrefix + [0, 0, 1, 0])
                == "malformed ClientHello: cipher_suites length 0 is outside the allowed 2...65534")
        #expect(
            Self.failure(client: Self.clientPrefix + [0x01, 0x00, 0x13, 0x01])
                == "malformed ClientHello: cipher_suites length 256 exceeds the 2 bytes left in the ClientHello")
    }

    @Test("legacy_session_id longer than 32")
    func sessionID() {
        var builder = ClientHelloBuilder()
        builder.sessionID = [UInt8](repeating: 1, count: 33)
        #expect(
            Self.failure(client: builder.body)
                == "malformed ClientHello: legacy_session_id length 33 is outside the allowed 0...32")
        var server = ServerHelloBuilder()
        server.sessionID = [UInt8](repeating: 1, count: 33)
        #expect(
            Self.failure(server: server.body)
                == "malformed ServerHello: legacy_session_id_echo length 33 is outside the allowed 0...32")
    }

    @Test("legacy_compression_methods may not be empty")
    func compressionMethods() {
        var builder = ClientHelloBuilder()
        builder.compressionMethods = []
        #expect(
            Self.failure(client: builder.body)
                == "malformed ClientHello: legacy_compression_methods length 0 is outside the allowed 1...255")
    }

    @Test("truncated fixed fields name the field")
    func truncatedFields() {
        #expect(
            Self.failure(client: [3])
                == "malformed ClientHello: ClientHello is truncated: legacy_version needs 2 bytes but 1 remain")
        #expect(
            Self.failure(client: [3, 3, 1, 2])
                == "malformed ClientHello: ClientHello is truncated: random needs 32 bytes but 2 remain")
        #expect(
            Self.failure(server: [])
                == "malformed ServerHello: ServerHello is truncated: legacy_version needs 2 bytes but 0 remain")
        let server = ServerHelloBuilder().body
        #expect(
            Self.failure(server: Array(server[..<(2 + 32 + 33 + 2)]))
                == "malformed ServerHello: ServerHello is truncated: legacy_compression_method needs 1 bytes but 0 remain"
        )
    }

    @Test("the extensions block must end the message exactly")
    func extensionsBlock() {
        let body = ClientHelloBuilder().body
        #expect(
            Self.failure(client: body + [0])
                == "malformed ClientHello: 1 unexpected bytes follow the last field of the ClientHello")
        #expect(
            Self.failure(client: Array(body.dropLast()))?
                .hasPrefix("malformed ClientHello: extensions length") == true)
        var oneByteBlock = ClientHelloBuilder()
        oneByteBlock.extensions = nil
        #expect(
            Self.failure(client: oneByteBlock.body + [0])
                == "malformed ClientHello: ClientHello is truncated: extensions length needs 2 bytes but 1 remain")
    }

    @Test("an extension's data may not run past the block")
    func extensionOverrun() {
        #expect(
            Self.failure(clientExtensions: [[0, 16, 0, 9, 0, 3, 2]])
                == "malformed ClientHello: application_layer_protocol_negotiation extension (16) extension_data "
                + "length 9 exceeds the 3 bytes left in the extensions")
    }

    @Test("an extension type may not repeat (RFC 8446 §4.2)")
    func duplicateExtension() {
        #expect(
            Self.failure(clientExtensions: [Wire.ext(23, []), Wire.ext(5, []), Wire.ext(23, [])])
                == "malformed ClientHello: extension 23 (extended_master_secret) appears twice")
    }

    @Test(
        "a repeat is found in a long list too, where a set takes over from the linear search",
        arguments: [31, 32, 33, 200])
    func duplicateInLongList(distinct: Int) {
        // Private-use types from 0xFF00 up, so none of them is decoded; then the first one again.
        let types = (0..<distinct).map { UInt16(0xFF00 + $0) } + [0xFF00]
        let extensions = types.map { Wire.ext($0, []) }
        #expect(
            Self.failure(clientExtensions: extensions)
                == "malformed ClientHello: extension 65280 (unknown) appears twice")
    }

    @Test(
        "ClientHello extension contents",
        arguments: [
            (Wire.ext(43, Wire.vector(1, [3, 4, 3])), "versions length 3 is odd"),
            (
                Wire.ext(43, [4, 3, 4, 3]),
                "versions length 4 exceeds the 3 bytes left in the supported_versions extension"
            ),
            (
                Wire.ext(43, Wire.vector(1, [3, 4]) + [0]),
                "1 unexpected bytes follow the last field of the supported_versions extension"
            ),
            (Wire.ext(43, [0]), "versions length 0 is outside the allowed 2...254"),
            (Wire.ext(10, Wire.vector(2, [0, 29, 0])), "named_group_list length 3 is odd"),
            (
                Wire.ext(13, Wire.vector(2, [])),
                "supported_signature_algorithms length 0 is outside the allowed 2...65534"
            ),
            (Wire.ext(23, [0]), "extended_master_secret extension_data length 1 is not 0"),
            (Wire.ext(16, Wire.vector(2, [0, 0x68])), "ProtocolName length 0 is outside the allowed 1...255"),
            (
                Wire.ext(16, Wire.vector(2, [5, 0x68])),
                "ProtocolName length 5 exceeds the 1 bytes left in the protocol_name_list"
            ),
            (
                Wire.ext(16, []),
                "application_layer_protocol_negotiation extension is truncated: protocol_name_list length needs 2 bytes but 0 remain"
            ),
            (Wire.ext(0, Wire.vector(2, [])), "server_name_list length 0 is outside the allowed 1...65535"),
            (
                Wire.ext(0, Wire.vector(2, [0] + Wire.vector(2, []))),
                "HostName length 0 is outside the allowed 1...65535"
            ),
            // Server names that are not host names: TLSUnreadableHelloTests.
            (
                Wire.ext(
                    0, Wire.vector(2, [0] + Wire.vector(2, Array("a.b".utf8)) + [0] + Wire.vector(2, Array("c.d".utf8)))
                ),
                "server_name_list holds two host_name entries"
            ),
        ])
    func clientExtensionContents(ext: [UInt8], reason: String) {
        #expect(Self.failure(clientExtensions: [ext]) == "malformed ClientHello: " + reason)
    }

    @Test(
        "ServerHello extension contents",
        arguments: [
            (
                Wire.ext(43, [3]),
                "supported_versions extension is truncated: selected_version needs 2 bytes but 1 remain"
            ),
            (
                Wire.ext(43, [3, 4, 3, 3]),
                "2 unexpected bytes follow the last field of the supported_versions extension"
            ),
            (Wire.alpnExtension(["h2", "http/1.1"]), "the server's protocol_name_list holds 2 names, not 1"),
            (Wire.ext(23, [1, 2]), "extended_master_secret extension_data length 2 is not 0"),
        ])
    func serverExtensionContents(ext: [UInt8], reason: String) {
        #expect(Self.failure(serverExtensions: [ext]) == "malformed ServerHello: " + reason)
    }

    @Test("an extension the scanner does not decode may hold anything")
    func opaqueExtensions() {
        #expect(Self.failure(clientExtensions: [Wire.ext(51, [0xFF, 0xFF, 0xFF]), Wire.ext(0xFAFA, [1])]) == nil)
    }
}
