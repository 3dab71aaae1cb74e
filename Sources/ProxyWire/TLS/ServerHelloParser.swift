/// Decodes a ServerHello handshake message body (after its 4-byte handshake header):
///
///     ProtocolVersion legacy_version;                        // RFC 8446 §4.1.3
///     Random random;                                         // 32 bytes
///     opaque legacy_session_id_echo<0..32>;
///     CipherSuite cipher_suite;
///     uint8 legacy_compression_method;
///     Extension extensions<6..2^16-1>;                       // absent allowed before TLS 1.3
///
/// A HelloRetryRequest has the same structure and is told apart only by its random.
enum ServerHelloParser {
    /// SHA-256("HelloRetryRequest"): the `random` of a HelloRetryRequest (RFC 8446 §4.1.3).
    static let helloRetryRequestRandom: [UInt8] = [
        0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
        0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C,
    ]

    static func parse(_ body: ArraySlice<UInt8>) throws(TLSParseError) -> ServerHello {
        try TLSByteReader.reading(body, as: "ServerHello", parse)
    }

    private static func parse(_ reader: inout TLSByteReader) throws(TLSParseError) -> ServerHello {
        let legacyVersion = try reader.readUInt16("legacy_version")
        let random = try reader.readBytes(32, "random")
        _ = try reader.readVector("legacy_session_id_echo", lengthBytes: 1, allowedLengths: 0...32)
        let cipherSuite = try reader.readUInt16("cipher_suite")
        _ = try reader.readUInt8("legacy_compression_method")
        let extensions = try TLSExtensionBlock.read(from: &reader)

        var hello = ServerHello(
            legacyVersion: legacyVersion,
            selectedVersion: legacyVersion,
            cipherSuite: cipherSuite,
            extensionTypes: extensions.map(\.type),
            isHelloRetryRequest: random.elementsEqual(helloRetryRequestRandom))
        for ext in extensions {
            switch ext.type {
            case TLSExtensionType.supportedVersions:
                hello.selectedVersion = try TLSExtensionDecoders.serverSelectedVersion(ext)
            case TLSExtensionType.applicationLayerProtocolNegotiation:
                hello.alpnProtocol = try TLSExtensionDecoders.alpnSelectedProtocol(ext)
            case TLSExtensionType.extendedMasterSecret:
                try TLSExtensionDecoders.requireEmpty(ext)
                hello.extendedMasterSecret = true
            default:
                break  // Reported in extensionTypes only.
            }
        }
        return hello
    }
}
