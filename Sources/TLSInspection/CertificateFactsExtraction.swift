import ATSPolicy
internal import COpenSSL
import Glibc

extension X509Certificate {
    /// What the ATS rules need to know about this certificate, as plain Swift values.
    package var facts: CertificateFacts {
        let key = publicKey
        let names = subjectAltNames
        return CertificateFacts(
            subject: subject, keyType: key.type, keyBits: key.bits, signatureAlgorithm: signatureAlgorithmName,
            signatureHash: signatureHash, notBefore: notBefore, notAfter: notAfter, dnsNames: names.dns,
            wildcardsOverPublicSuffix: PublicSuffixList.shared.wildcardsOverPublicSuffix(names.dns),
            ipAddresses: names.ip, extendedKeyUsage: extendedKeyUsage, spkiSHA256: spkiSHA256,
            isSelfSigned: isSelfSigned)
    }

    var publicKey: (type: CertificateFacts.KeyType, bits: Int) {
        guard let key = X509_get0_pubkey(raw) else { return (.other, 0) }
        let type: CertificateFacts.KeyType
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_RSA, EVP_PKEY_RSA_PSS: type = .rsa
        case EVP_PKEY_EC: type = .ec
        case EVP_PKEY_ED25519: type = .ed25519
        case EVP_PKEY_ED448: type = .ed448
        case EVP_PKEY_DSA: type = .dsa
        default: type = .other
        }
        return (type, Int(EVP_PKEY_get_bits(key)))
    }

    /// `sha256WithRSAEncryption`, `ecdsa-with-SHA384`, `ED25519`…
    var signatureAlgorithmName: String {
        let nid = X509_get_signature_nid(raw)
        guard nid != NID_undef, let name = OBJ_nid2ln(nid) else { return "unknown" }
        return String(cString: name)
    }

    var signatureHash: CertificateFacts.SignatureHash {
        var digest: Int32 = NID_undef
        var publicKey: Int32 = NID_undef
        var securityBits: Int32 = 0
        var flags: UInt32 = 0
        guard X509_get_signature_info(raw, &digest, &publicKey, &securityBits, &flags) == 1 else { return .unknown }
        switch digest {
        case NID_md2: return .md2
        case NID_md4: return .md4
        case NID_md5: return .md5
        case NID_sha1: return .sha1
        case NID_sha224: return .sha224
        case NID_sha256: return .sha256
        case NID_sha384: return .sha384
        case NID_sha512: return .sha512
        case NID_undef where publicKey == NID_ED25519 || publicKey == NID_ED448: return .intrinsic
        default: return .unknown
        }
    }

    package var notBefore: Int64 { X509Certificate.seconds(X509_get0_notBefore(raw)) }
    package var notAfter: Int64 { X509Certificate.seconds(X509_get0_notAfter(raw)) }

    static func seconds(_ time: UnsafePointer<ASN1_TIME>?) -> Int64 {
        guard let time else { return 0 }
        var broken = tm()
        guard ASN1_TIME_to_tm(time, &broken) == 1 else { return 0 }
        return Int64(timegm(&broken))
    }

    var subjectAltNames: (dns: [String], ip: [IPAddress]) {
        guard let names = X509_get_ext_d2i(raw, NID_subject_alt_name, nil, nil) else { return ([], []) }
        let stack = OpaquePointer(names)
        defer { GENERAL_NAMES_free(stack) }
        var dns: [String] = []
        var ip: [IPAddress] = []
        for index in 0..<OPENSSL_sk_num(stack) {
            guard let raw = OPENSSL_sk_value(stack, index) else { continue }
            let name = raw.assumingMemoryBound(to: GENERAL_NAME.self).pointee
            switch name.type {
            case GEN_DNS:
                if let text = X509Certificate.string(name.d.dNSName) { dns.append(text) }
            case GEN_IPADD:
                if let bytes = X509Certificate.bytes(name.d.iPAddress), let address = X509Certificate.address(bytes) {
                    ip.append(address)
                }
            default:
                continue
            }
        }
        return (dns, ip)
    }

    /// Every purpose of the extendedKeyUsage extension, in order; nil when the certificate has none.
    var extendedKeyUsage: [CertificateFacts.ExtendedKeyUsage]? {
        guard let list = X509_get_ext_d2i(raw, NID_ext_key_usage, nil, nil) else { return nil }
        let stack = OpaquePointer(list)
        defer { OPENSSL_sk_pop_free(stack) { ASN1_OBJECT_free(OpaquePointer($0)) } }
        return (0..<OPENSSL_sk_num(stack)).compactMap { index in
            guard let object = OPENSSL_sk_value(stack, index).map(OpaquePointer.init) else { return nil }
            switch OBJ_obj2nid(object) {
            case NID_server_auth: return .serverAuth
            case NID_client_auth: return .clientAuth
            case NID_anyExtendedKeyUsage: return .any
            case NID_ns_sgc, NID_ms_sgc: return .serverGatedCrypto
            case NID_email_protect: return .emailProtection
            default: return .other(X509Certificate.dottedOID(object))
            }
        }
    }

    /// The Authority Information Access extension's `caIssuers` URIs: where the issuer can be fetched.
    package var caIssuersURLs: [String] {
        guard let access = X509_get_ext_d2i(raw, NID_info_access, nil, nil) else { return [] }
        let stack = OpaquePointer(access)
        defer { AUTHORITY_INFO_ACCESS_free(stack) }
        return (0..<OPENSSL_sk_num(stack)).compactMap { index in
            guard let raw = OPENSSL_sk_value(stack, index) else { return nil }
            let description = raw.assumingMemoryBound(to: ACCESS_DESCRIPTION.self).pointee
            guard OBJ_obj2nid(description.method) == NID_ad_ca_issuers, let location = description.location,
                location.pointee.type == GEN_URI
            else { return nil }
            return X509Certificate.string(location.pointee.d.uniformResourceIdentifier)
        }
    }

    private static func dottedOID(_ object: OpaquePointer) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        let length = Int(OBJ_obj2txt(&buffer, Int32(buffer.count), object, 1))
        guard length > 0, length < buffer.count else { return "unknown" }
        return String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// SHA-256 of the DER SubjectPublicKeyInfo: the `SPKI-SHA256-BASE64` of `NSPinnedDomains`.
    package var spkiSHA256: SPKIHash? {
        guard let publicKey = X509_get_X509_PUBKEY(raw) else { return nil }
        var buffer: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_X509_PUBKEY(publicKey, &buffer)
        guard length > 0, let buffer else { return nil }
        defer { CRYPTO_free(buffer, nil, 0) }
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var digestLength: UInt32 = 0
        guard EVP_Digest(buffer, Int(length), &digest, &digestLength, EVP_sha256(), nil) == 1 else { return nil }
        return SPKIHash(bytes: Array(digest.prefix(Int(digestLength))))
    }

    /// Subject equals issuer and the signature verifies with the certificate's own key.
    package var isSelfSigned: Bool { X509_self_signed(raw, 1) == 1 }

    private static func string(_ text: UnsafeMutablePointer<ASN1_STRING>?) -> String? {
        guard let bytes = bytes(text) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func bytes(_ text: UnsafeMutablePointer<ASN1_STRING>?) -> [UInt8]? {
        guard let text, let data = ASN1_STRING_get0_data(text) else { return nil }
        return Array(UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(text))))
    }

    private static func address(_ bytes: [UInt8]) -> IPAddress? {
        switch bytes.count {
        case 4:
            return .v4(bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        case 16:
            let high = bytes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let low = bytes[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            return .v6(high: high, low: low)
        default:
            return nil
        }
    }
}
