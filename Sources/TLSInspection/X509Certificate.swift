internal import COpenSSL
internal import CProxyShims
import Glibc

/// One X.509 certificate: the single owner of its `X509*`, freed in `deinit`.
///
/// Immutable after creation (nothing here mutates the certificate), so it may be shared across
/// threads: OpenSSL's const accessors are thread-safe on a certificate nobody modifies.
package final class X509Certificate: @unchecked Sendable {
    let raw: OpaquePointer

    /// Takes ownership of a certificate reference (the caller's reference moves here).
    init(taking raw: OpaquePointer) { self.raw = raw }

    /// Shares a certificate another object owns: takes an extra reference.
    convenience init(retaining raw: OpaquePointer) {
        X509_up_ref(raw)
        self.init(taking: raw)
    }

    deinit { X509_free(raw) }

    /// Every certificate in PEM text, in order (a chain file: leaf first).
    package static func certificates(pem: [UInt8]) throws(TLSError) -> [X509Certificate] {
        let bio: OpaquePointer? = pem.withUnsafeBytes { BIO_new_mem_buf($0.baseAddress, Int32($0.count)) }
        guard let bio else { throw TLSError.drainingQueue("BIO_new_mem_buf") }
        defer { BIO_free(bio) }
        var result: [X509Certificate] = []
        while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) {
            result.append(X509Certificate(taking: certificate))
        }
        // The loop ends with a "no start line" error at the end of the text; anything else is real.
        let errors = TLSError.drainErrorQueue()
        guard !result.isEmpty else { throw TLSError(operation: "reading PEM certificates", openSSLErrors: errors) }
        return result
    }

    /// A certificate from DER bytes.
    package convenience init(der: [UInt8]) throws(TLSError) {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_X509(nil, &cursor, buffer.count)
        }
        guard let parsed else { throw TLSError.drainingQueue("reading a DER certificate") }
        self.init(taking: parsed)
    }

    /// The DER encoding.
    package var der: [UInt8] {
        var buffer: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_X509(raw, &buffer)
        guard length > 0, let buffer else { return [] }
        defer { CRYPTO_free(buffer, nil, 0) }
        return Array(UnsafeBufferPointer(start: buffer, count: Int(length)))
    }

    /// The subject in RFC 2253 form (`CN=example.com,O=Example`).
    package var subject: String { X509Certificate.rfc2253(X509_get_subject_name(raw)) }
    package var issuer: String { X509Certificate.rfc2253(X509_get_issuer_name(raw)) }

    static func rfc2253(_ name: OpaquePointer?) -> String {
        guard let name, let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        guard X509_NAME_print_ex(bio, name, 0, CProxyShims_XN_FLAG_RFC2253()) >= 0 else { return "" }
        var chunk = [UInt8](repeating: 0, count: 4096)
        var text: [UInt8] = []
        while true {
            let count = BIO_read(bio, &chunk, Int32(chunk.count))
            if count <= 0 { break }
            text += chunk[0..<Int(count)]
        }
        return String(decoding: text, as: UTF8.self)
    }
}
