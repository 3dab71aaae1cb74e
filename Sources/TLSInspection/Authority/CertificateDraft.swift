internal import COpenSSL
import Glibc

/// An X.509 v3 certificate being built: the single owner of its `X509*` until ``sign(with:)``
/// hands a reference to the finished ``X509Certificate``; freed in `deinit` either way, so a throw
/// halfway leaks nothing. Shared by the CA (self-signed) and the leaves it mints.
final class CertificateDraft {
    private let raw: OpaquePointer

    init() throws(TLSError) {
        guard let certificate = X509_new() else { throw TLSError.drainingQueue("X509_new") }
        raw = certificate
        guard X509_set_version(raw, 2) == 1 else { throw TLSError.drainingQueue("X509_set_version") }  // 2 means v3
    }

    deinit { X509_free(raw) }

    /// A random 16-byte serial, top bit clear so the DER INTEGER is positive and stays 16 bytes,
    /// second bit set so it never shrinks below 16 (RFC 5280 §4.1.2.2: positive, ≤ 20 bytes).
    func setRandomSerial() throws(TLSError) {
        var bytes = [UInt8](repeating: 0, count: 16)
        guard RAND_bytes(&bytes, Int32(bytes.count)) == 1 else { throw TLSError.drainingQueue("RAND_bytes") }
        bytes[0] = bytes[0] & 0x7F | 0x40
        guard let number = BN_bin2bn(bytes, Int32(bytes.count), nil) else { throw TLSError.drainingQueue("BN_bin2bn") }
        defer { BN_free(number) }
        // Converts into the certificate's own serial, so there is no second ASN1_INTEGER to free.
        guard BN_to_ASN1_INTEGER(number, X509_get_serialNumber(raw)) != nil else {
            throw TLSError.drainingQueue("setting the serial number")
        }
    }

    /// The subject: `organization` (when given) then `commonName` (when given), as UTF-8 strings.
    /// - Throws: when OpenSSL refuses a value (a common name over 64 characters, ub-common-name).
    func setSubject(commonName: String?, organization: String? = nil) throws(TLSError) {
        guard let name = X509_NAME_new() else { throw TLSError.drainingQueue("X509_NAME_new") }
        defer { X509_NAME_free(name) }
        for (nid, value) in [(NID_organizationName, organization), (NID_commonName, commonName)] {
            guard let value else { continue }
            let bytes = Array(value.utf8)
            guard X509_NAME_add_entry_by_NID(name, nid, MBSTRING_UTF8, bytes, Int32(bytes.count), -1, 0) == 1 else {
                throw TLSError.drainingQueue("adding \(String(cString: OBJ_nid2sn(nid))) \"\(value)\" to a subject")
            }
        }
        guard X509_set_subject_name(raw, name) == 1 else { throw TLSError.drainingQueue("X509_set_subject_name") }
    }

    /// The issuer: `issuer`'s subject (copied).
    func setIssuer(_ issuer: X509Certificate) throws(TLSError) {
        guard X509_set_issuer_name(raw, X509_get_subject_name(issuer.raw)) == 1 else {
            throw TLSError.drainingQueue("X509_set_issuer_name")
        }
    }

    /// The issuer is the subject (a root).
    func setIssuerToSubject() throws(TLSError) {
        guard X509_set_issuer_name(raw, X509_get_subject_name(raw)) == 1 else {
            throw TLSError.drainingQueue("X509_set_issuer_name")
        }
    }

    /// Validity from `notBefore` to `notAfter`, seconds since 1970 (UTCTime before 2050, then
    /// GeneralizedTime, as RFC 5280 requires).
    func setValidity(notBefore: Int64, notAfter: Int64) throws(TLSError) {
        var start = time_t(notBefore)
        var end = time_t(notAfter)
        guard X509_time_adj_ex(X509_getm_notBefore(raw), 0, 0, &start) != nil,
            X509_time_adj_ex(X509_getm_notAfter(raw), 0, 0, &end) != nil
        else { throw TLSError.drainingQueue("setting the validity") }
    }

    /// The public half of `key` (the private half never enters the certificate).
    func setPublicKey(_ key: PrivateKey) throws(TLSError) {
        guard X509_set_pubkey(raw, key.raw) == 1 else { throw TLSError.drainingQueue("X509_set_pubkey") }
    }

    /// Adds an extension from OpenSSL's configuration syntax. Only for constant values written in
    /// this module (never for names a device sent: see ``addSubjectAltNames(_:critical:)``).
    /// - Parameter issuer: for authorityKeyIdentifier; nil means self-issued.
    func addExtension(_ nid: Int32, _ value: StaticString, issuer: X509Certificate? = nil) throws(TLSError) {
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer?.raw ?? raw, raw, nil, nil, 0)
        let name = String(cString: OBJ_nid2sn(nid))
        guard let made = X509V3_EXT_nconf_nid(nil, &context, nid, value.description) else {
            throw TLSError.drainingQueue("making the \(name) extension \"\(value)\"")
        }
        // X509_add_ext adds a copy: this one is ours to free.
        defer { X509_EXTENSION_free(made) }
        guard X509_add_ext(raw, made, -1) == 1 else { throw TLSError.drainingQueue("adding the \(name) extension") }
    }

    /// Adds subjectAltName built as typed GENERAL_NAMEs: each name is one dNSName or iPAddress
    /// entry holding its bytes as they are, so no character in a name can add another entry (a
    /// configuration string such as "DNS:a.test,DNS:evil.test" would).
    func addSubjectAltNames(_ names: [LeafName], critical: Bool) throws(TLSError) {
        guard let stack = GENERAL_NAMES_new() else { throw TLSError.drainingQueue("GENERAL_NAMES_new") }
        // Frees the stack and every name pushed onto it.
        defer { GENERAL_NAMES_free(stack) }
        for name in names {
            guard let entry = GENERAL_NAME_new() else { throw TLSError.drainingQueue("GENERAL_NAME_new") }
            let value: UnsafeMutablePointer<ASN1_STRING>?
            let type: Int32
            switch name {
            case .dns(let host):
                value = ASN1_IA5STRING_new()
                type = GEN_DNS
                if let value { _ = ASN1_STRING_set(value, Array(host.utf8), Int32(host.utf8.count)) }
            case .ip(let bytes):
                value = ASN1_OCTET_STRING_new()
                type = GEN_IPADD
                if let value { _ = ASN1_OCTET_STRING_set(value, bytes, Int32(bytes.count)) }
            }
            guard let value, ASN1_STRING_length(value) > 0 else {
                if let value { ASN1_STRING_free(value) }
                GENERAL_NAME_free(entry)
                throw TLSError.drainingQueue("making the subjectAltName entry \(name)")
            }
            // The entry now owns the value, and (once pushed) the stack owns the entry.
            GENERAL_NAME_set0_value(entry, type, UnsafeMutableRawPointer(value))
            guard OPENSSL_sk_push(stack, UnsafeRawPointer(entry)) > 0 else {
                GENERAL_NAME_free(entry)
                throw TLSError.drainingQueue("OPENSSL_sk_push")
            }
        }
        // X509_add1_ext_i2d encodes the stack into a new extension: the stack stays ours.
        guard
            X509_add1_ext_i2d(
                raw, NID_subject_alt_name, UnsafeMutableRawPointer(stack), critical ? 1 : 0,
                UInt(X509V3_ADD_DEFAULT)) == 1
        else { throw TLSError.drainingQueue("adding the subjectAltName extension") }
    }

    /// Signs with `key` over SHA-256 (ecdsa-with-SHA256 or sha256WithRSAEncryption) and returns the
    /// finished certificate, which holds its own reference: the draft is done with.
    func sign(with key: PrivateKey) throws(TLSError) -> X509Certificate {
        guard X509_sign(raw, key.raw, EVP_sha256()) > 0 else { throw TLSError.drainingQueue("signing the certificate") }
        return X509Certificate(retaining: raw)
    }
}
