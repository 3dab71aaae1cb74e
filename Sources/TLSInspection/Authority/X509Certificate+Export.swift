import ATSPolicy
internal import COpenSSL

extension X509Certificate {
    /// The certificate as PEM text (`-----BEGIN CERTIFICATE-----`).
    package var pem: [UInt8] {
        get throws(TLSError) { try MemoryBIO.collect("writing a PEM certificate") { PEM_write_bio_X509($0, raw) } }
    }

    /// The digests a fingerprint is taken with.
    package enum FingerprintDigest: Sendable {
        case sha256, sha1
    }

    /// The digest of the DER certificate in colon hex ("AB:CD:…"), as `openssl x509 -fingerprint`
    /// and iOS's certificate details show it.
    package func fingerprint(_ digest: FingerprintDigest) -> String {
        var bytes = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let type = digest == .sha256 ? EVP_sha256() : EVP_sha1()
        guard X509_digest(raw, type, &bytes, &length) == 1 else {
            ERR_clear_error()
            return ""
        }
        return bytes.prefix(Int(length)).map(Self.hexByte).joined(separator: ":")
    }

    /// The value of the subject's first CN, or nil.
    package var commonName: String? {
        let name = X509_get_subject_name(raw)
        let index = X509_NAME_get_index_by_NID(name, NID_commonName, -1)
        guard index >= 0, let entry = X509_NAME_get_entry(name, index),
            let value = X509_NAME_ENTRY_get_data(entry), let data = ASN1_STRING_get0_data(value)
        else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(value))), as: UTF8.self)
    }

    /// The public key's algorithm and size: "EC 256-bit", "RSA 2048-bit".
    package var keySummary: String {
        let key = publicKey
        return "\(key.type == .ec ? "EC" : key.type == .rsa ? "RSA" : "\(key.type)") \(key.bits)-bit"
    }

    static func hexByte(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
    }
}
