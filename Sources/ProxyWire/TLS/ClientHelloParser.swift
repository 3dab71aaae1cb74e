/// Decodes a ClientHello handshake message body (after its 4-byte handshake header):
///
///     ProtocolVersion legacy_version;                        // RFC 8446 §4.1.2
///     Random random;                                         // 32 bytes
///     opaque legacy_session_id<0..32>;
///     CipherSuite cipher_suites<2..2^16-2>;
///     opaque legacy_compression_methods<1..2^8-1>;
///     Extension extensions<8..2^16-1>;                       // absent allowed before TLS 1.3
enum ClientHelloParser {
    static func parse(_ body: ArraySlice<UInt8>) throws(TLSParseError) -> ClientHello {
        try TLSByteReader.reading(body, as: "ClientHello", parse)
    }

    private static func parse(_ reader: inout TLSByteReader) throws(TLSParseError) -> ClientHello {
        let legacyVersion = try reader.readUInt16("legacy_version")
        _ = try reader.readBytes(32, "random")
        _ = try reader.readVector("legacy_session_id", lengthBytes: 1, allowedLengths: 0...32)
        var suites = try reader.readVector(
            "cipher_suites", lengthBytes: 2, allowedLengths: 2...0xFFFE, elementSize: 2)
        _ = try reader.readVector("legacy_compression_methods", lengthBytes: 1, allowedLengths: 1...0xFF)
        let extensions = try TLSExtensionBlock.read(from: &reader)

        var hello = ClientHello(
            legacyVersion: legacyVersion,
            cipherSuites: try suites.readAllUInt16("cipher_suite"),
            extensionTypes: extensions.map(\.type))
        for ext in extensions {
            try decode(ext, into: &hello)
        }
        return hello
    }

    private static func decode(_ ext: TLSExtension, into hello: inout ClientHello) throws(TLSParseError) {
        switch ext.type {
        case TLSExtensionType.serverName:
            hello.serverName = try TLSExtensionDecoders.hostName(ext)
        case TLSExtensionType.supportedGroups:
            hello.supportedGroups = try TLSExtensionDecoders.uint16List(ext, field: "named_group_list")
        case TLSExtensionType.signatureAlgorithms:
            hello.signatureAlgorithms = try TLSExtensionDecoders.uint16List(
                ext, field: "supported_signature_algorithms")
        case TLSExtensionType.applicationLayerProtocolNegotiation:
            hello.alpnProtocols = try TLSExtensionDecoders.alpnProtocols(ext)
        case TLSExtensionType.extendedMasterSecret:
            try TLSExtensionDecoders.requireEmpty(ext)
            hello.supportsExtendedMasterSecret = true
        case TLSExtensionType.supportedVersions:
            hello.supportedVersions = try TLSExtensionDecoders.clientSupportedVersions(ext)
        default:
            break  // Reported in extensionTypes only; its contents do not affect what is logged.
        }
    }
}
