internal import COpenSSL
internal import CProxyShims

extension PrivateKey {
    /// The kinds of key atsproxy generates: both meet ATS (RSA ≥ 2048, ECC ≥ 256 bits).
    package enum Kind: String, Sendable, CaseIterable {
        /// ECDSA on P-256: a signature costs ~20 µs, an RSA-2048 one ~240 µs (`openssl speed` on
        /// this 2-core machine).
        case ecdsaP256
        /// RSA-2048: for clients that take no ECDSA root; key generation takes ~200 ms.
        case rsa2048
    }

    /// A new key of `kind`.
    package static func generate(_ kind: Kind) throws(TLSError) -> PrivateKey {
        let key: OpaquePointer?
        switch kind {
        case .ecdsaP256: key = CProxyShims_EVP_EC_gen("P-256")
        case .rsa2048: key = CProxyShims_EVP_RSA_gen(2048)
        }
        guard let key else { throw TLSError.drainingQueue("generating a \(kind) key") }
        return PrivateKey(taking: key)
    }

    /// The key as unencrypted PKCS #8 PEM (`-----BEGIN PRIVATE KEY-----`), as OpenSSL 3 writes it.
    package var pkcs8PEM: [UInt8] {
        get throws(TLSError) {
            try MemoryBIO.collect("writing a PKCS #8 key") { PEM_write_bio_PrivateKey($0, raw, nil, nil, 0, nil, nil) }
        }
    }
}

/// Text OpenSSL writes into a memory BIO, collected as bytes.
enum MemoryBIO {
    /// Runs `write` on a new memory BIO (it returns 1 on success) and returns what it wrote.
    static func collect(_ what: String, _ write: (OpaquePointer) -> Int32) throws(TLSError) -> [UInt8] {
        guard let bio = BIO_new(BIO_s_mem()) else { throw TLSError.drainingQueue("BIO_new") }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { throw TLSError.drainingQueue(what) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = BIO_read(bio, &chunk, Int32(chunk.count))
            if count <= 0 { break }
            bytes += chunk[0..<Int(count)]
        }
        return bytes
    }
}
