/// The 5-byte header in front of every TLS record (RFC 8446 §5.1, RFC 5246 §6.2.1):
///
///     ContentType type;                    // 22 handshake, 21 alert, 20 change_cipher_spec…
///     ProtocolVersion legacy_record_version;
///     uint16 length;
struct TLSRecordHeader: Equatable {
    static let size = 5
    /// 2^14: the most plaintext a record may carry (RFC 8446 §5.1, RFC 5246 §6.2.1). Hellos
    /// always travel in plaintext, so the 2^14 + 2048 that RFC 5246 allows compressed or
    /// encrypted records does not apply.
    static let maximumPlaintextLength = 16_384

    let contentType: UInt8
    let legacyRecordVersion: UInt16
    let length: Int
}

/// What a record header's first bytes say, decided as early as the bytes allow.
enum TLSRecordHeaderVerdict: Equatable {
    /// Consistent so far; need up to `TLSRecordHeader.size` bytes.
    case incomplete
    case record(TLSRecordHeader)
    /// An SSL 2.0-format ClientHello (RFC 5246 Appendix E.2) whose message (starting with
    /// msg_type) is `messageLength` bytes long, of which the header bytes held the first 3.
    case sslv2ClientHello(messageLength: Int)
    case notTLS(String)
    case failed(String)
}

extension TLSRecordHeader {
    /// Classifies a header prefix. Checks run in byte order and each looks only at bytes already
    /// present, so the verdict on a stream is the same however it was split into chunks.
    ///
    /// The first record of a stream decides whether the stream is TLS at all, so there a bad
    /// content type or version means `notTLS`; in later records it means broken TLS (`failed`).
    static func classify(
        _ prefix: TLSPendingBytes,
        isFirstRecord: Bool,
        acceptsSSLv2Hello: Bool
    ) -> TLSRecordHeaderVerdict {
        guard let type = prefix.first else { return .incomplete }
        if isFirstRecord, acceptsSSLv2Hello, type & 0x80 != 0 {
            return classifySSLv2Hello(prefix)
        }
        guard (TLSContentType.changeCipherSpec...TLSContentType.applicationData).contains(type) else {
            let reason = "\(TLSLogSafeText.describing(type)) is not a TLS record content type"
            return isFirstRecord
                ? .notTLS("the first byte " + reason + " (22, handshake)")
                : .failed("a record's first byte " + reason)
        }
        guard prefix.count >= 2 else { return .incomplete }
        // Every TLS version so far is 3.x (SSL 3.0 = 3.0 … TLS 1.3 = 3.4); a ClientHello's record
        // usually says 3.1 for old middleboxes' sake (RFC 8446 §5.1).
        guard prefix[1] == 3 else {
            return versionVerdict(
                "\(TLSLogSafeText.describing(prefix[1])) is not a TLS major version (3)", isFirstRecord)
        }
        guard prefix.count >= 3 else { return .incomplete }
        guard prefix[2] <= 4 else {
            return versionVerdict("legacy_record_version 3.\(prefix[2]) is newer than TLS 1.3 (3.4)", isFirstRecord)
        }
        guard prefix.count >= size else { return .incomplete }
        return .record(
            TLSRecordHeader(
                contentType: type,
                legacyRecordVersion: UInt16(prefix[1]) << 8 | UInt16(prefix[2]),
                length: Int(prefix[3]) << 8 | Int(prefix[4])))
    }

    private static func versionVerdict(_ reason: String, _ isFirstRecord: Bool) -> TLSRecordHeaderVerdict {
        isFirstRecord ? .notTLS("the first record's " + reason) : .failed("a record's " + reason)
    }

    /// The SSL 2.0 two-byte header: high bit set, then a 15-bit length; then msg_type 1
    /// (client-hello) and a version, 0x0002 for SSL 2.0 itself or 3.x (RFC 5246 Appendix E.2).
    private static func classifySSLv2Hello(_ prefix: TLSPendingBytes) -> TLSRecordHeaderVerdict {
        guard prefix.count >= 3 else { return .incomplete }
        guard prefix[2] == TLSHandshakeType.clientHello else {
            return .notTLS(
                "the first byte \(TLSLogSafeText.describing(prefix[0])) is not a TLS record content type "
                    + "and the bytes are not an SSLv2-compatible ClientHello (msg_type \(prefix[2]), not 1)")
        }
        guard prefix.count >= 4 else { return .incomplete }
        guard prefix[3] == 0 || prefix[3] == 3 else {
            return .notTLS("an SSLv2-format ClientHello's version major \(prefix[3]) is neither 0x00 nor 0x03")
        }
        guard prefix.count >= size else { return .incomplete }
        let version = UInt16(prefix[3]) << 8 | UInt16(prefix[4])
        guard version == 0x0002 || (0x0300...0x0304).contains(version) else {
            return .notTLS("an SSLv2-format ClientHello's version \(TLSHex.uint16(version)) is not SSL or TLS")
        }
        let messageLength = Int(prefix[0] & 0x7F) << 8 | Int(prefix[1])
        guard messageLength >= SSLv2ClientHelloParser.fixedPartLength else {
            return .failed("SSLv2-compatible ClientHello length \(messageLength) is shorter than its fixed fields (9)")
        }
        return .sslv2ClientHello(messageLength: messageLength)
    }
}
