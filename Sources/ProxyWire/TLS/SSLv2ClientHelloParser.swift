/// Decodes the body of an SSL 2.0-format ClientHello, the backward-compatible hello that old
/// clients sent so SSLv2-only servers could answer (RFC 5246 Appendix E.2). The body follows
/// the 2-byte record header whose high bit is set:
///
///     uint8 msg_type;                 // 1
///     Version version;                // highest version the client supports
///     uint16 cipher_spec_length;      // multiple of 3
///     uint16 session_id_length;
///     uint16 challenge_length;        // 16...32
///     V2CipherSpec cipher_specs[cipher_spec_length];
///     opaque session_id[session_id_length];
///     opaque challenge[challenge_length];
enum SSLv2ClientHelloParser {
    /// msg_type, version and the three lengths.
    static let fixedPartLength = 9

    static func parse(_ body: ArraySlice<UInt8>) throws(TLSParseError) -> ClientHello {
        try TLSByteReader.reading(body, as: "SSLv2-compatible ClientHello", parse)
    }

    private static func parse(_ reader: inout TLSByteReader) throws(TLSParseError) -> ClientHello {
        let messageType = try reader.readUInt8("msg_type")
        guard messageType == TLSHandshakeType.clientHello else {
            throw TLSParseError("msg_type \(messageType) is not 1 (client-hello)")
        }
        let version = try reader.readUInt16("version")
        let cipherSpecLength = Int(try reader.readUInt16("cipher_spec_length"))
        let sessionIDLength = Int(try reader.readUInt16("session_id_length"))
        let challengeLength = Int(try reader.readUInt16("challenge_length"))
        guard cipherSpecLength > 0, cipherSpecLength % 3 == 0 else {
            throw TLSParseError("cipher_spec_length \(cipherSpecLength) is not a positive multiple of 3")
        }
        guard sessionIDLength <= 32 else {
            throw TLSParseError("session_id_length \(sessionIDLength) exceeds 32")
        }
        guard (16...32).contains(challengeLength) else {
            throw TLSParseError("challenge_length \(challengeLength) is outside 16...32")
        }
        guard cipherSpecLength + sessionIDLength + challengeLength == reader.remainingCount else {
            throw TLSParseError(
                "cipher_spec_length \(cipherSpecLength) + session_id_length \(sessionIDLength) + "
                    + "challenge_length \(challengeLength) does not match the \(reader.remainingCount) bytes "
                    + "that follow")
        }

        var suites: [UInt16] = []
        for _ in 0..<(cipherSpecLength / 3) {
            // A V2CipherSpec whose first byte is 0 is a TLS cipher suite; the others name SSL 2.0
            // ciphers, which no TLS server can select.
            let kind = try reader.readUInt8("cipher spec")
            let suite = try reader.readUInt16("cipher spec")
            if kind == 0 { suites.append(suite) }
        }
        return ClientHello(legacyVersion: version, cipherSuites: suites, isSSLv2Compatible: true)
    }
}
