internal import COpenSSL
import POSIX

/// A private key: the single owner of its `EVP_PKEY`, freed in `deinit`.
///
/// Immutable once read, so shared across threads: every server stream that presents it signs with
/// it, and OpenSSL's signing does not modify the key.
package final class PrivateKey: @unchecked Sendable {
    let raw: OpaquePointer

    /// Takes ownership of a key reference (the caller's reference moves here).
    init(taking raw: OpaquePointer) { self.raw = raw }

    deinit { EVP_PKEY_free(raw) }

    /// The first private key in PEM text (PKCS #8 or a traditional RSA/EC key), unencrypted.
    package convenience init(pem: [UInt8]) throws(TLSError) {
        let bio: OpaquePointer? = pem.withUnsafeBytes { BIO_new_mem_buf($0.baseAddress, Int32($0.count)) }
        guard let bio else { throw TLSError.drainingQueue("BIO_new_mem_buf") }
        defer { BIO_free(bio) }
        guard let key = PEM_read_bio_PrivateKey(bio, nil, nil, nil) else {
            throw TLSError.drainingQueue("reading a PEM private key")
        }
        self.init(taking: key)
    }
}

/// What a server stream presents: a certificate chain (leaf first) and the leaf's private key,
/// checked to belong together when made.
///
/// Given to a ``TLSServerContext`` (every stream of the context presents it) or to one stream
/// (``TLSStream/Role/server(credentials:)``): intercept mode presents a leaf minted for each host
/// over one shared context.
package struct ServerCredentials: Sendable {
    package let chain: [X509Certificate]
    package let key: PrivateKey

    /// - Throws: when the chain is empty or the key is not the leaf's.
    package init(chain: [X509Certificate], key: PrivateKey) throws(TLSError) {
        guard let leaf = chain.first else {
            throw TLSError(operation: "making server credentials", openSSLErrors: ["the certificate chain is empty"])
        }
        guard X509_check_private_key(leaf.raw, key.raw) == 1 else {
            throw TLSError(
                operation: "making server credentials for \(leaf.subject)",
                openSSLErrors: TLSError.drainErrorQueue() + ["the private key is not the leaf's"])
        }
        self.chain = chain
        self.key = key
    }

    /// Reads a PEM chain file (leaf first, then its intermediates) and a PEM key file.
    package static func loading(chainFile: String, keyFile: String) throws(TLSError) -> ServerCredentials {
        let chainPEM: [UInt8]
        do { chainPEM = try FileBytes.read(chainFile) } catch {
            throw TLSError(
                operation: "reading certificate chain \(chainFile)",
                openSSLErrors: ["cannot read the file: \(error.reason)"])
        }
        let keyPEM: [UInt8]
        do { keyPEM = try FileBytes.read(keyFile) } catch {
            throw TLSError(
                operation: "reading private key \(keyFile)", openSSLErrors: ["cannot read the file: \(error.reason)"])
        }
        return try ServerCredentials(chain: X509Certificate.certificates(pem: chainPEM), key: PrivateKey(pem: keyPEM))
    }

    /// Installs the chain and key with `install` (`SSL_CTX_use_cert_and_key` or `SSL_use_cert_and_key`),
    /// which takes its own references to all three, so the stack made here is freed here.
    func install(
        _ what: String, _ install: (OpaquePointer, OpaquePointer, OpaquePointer) -> Int32
    ) throws(TLSError) {
        guard let stack = OPENSSL_sk_new_null() else { throw TLSError.drainingQueue("OPENSSL_sk_new_null") }
        defer { OPENSSL_sk_free(stack) }
        for certificate in chain.dropFirst() {
            guard OPENSSL_sk_push(stack, UnsafeRawPointer(certificate.raw)) > 0 else {
                throw TLSError.drainingQueue("OPENSSL_sk_push")
            }
        }
        guard install(chain[0].raw, key.raw, stack) == 1 else { throw TLSError.drainingQueue(what) }
    }
}
