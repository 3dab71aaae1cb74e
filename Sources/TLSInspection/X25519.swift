internal import COpenSSL

/// Curve25519 keys as WireGuard uses them (RFC 7748's X25519): 32 raw bytes each, made and
/// derived by OpenSSL rather than by code of our own.
package enum X25519 {
    /// Why a key could not be made or read.
    package struct KeyError: Error, CustomStringConvertible {
        package let description: String
    }

    /// A new private key from OpenSSL's generator (any 32 bytes are a key: X25519 clamps them).
    package static func generatePrivateKey() throws(KeyError) -> [UInt8] {
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_X25519, nil) else {
            throw KeyError(description: "X25519: no key context")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_keygen(context, &key) == 1, let key else {
            throw KeyError(description: "X25519: key generation failed")
        }
        defer { EVP_PKEY_free(key) }
        return try raw(key, EVP_PKEY_get_raw_private_key)
    }

    /// The public key of `privateKey` (32 bytes), as `wg pubkey` derives it.
    package static func publicKey(of privateKey: [UInt8]) throws(KeyError) -> [UInt8] {
        guard privateKey.count == 32 else {
            throw KeyError(description: "an X25519 private key is 32 bytes, not \(privateKey.count)")
        }
        guard let key = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nil, privateKey, 32) else {
            throw KeyError(description: "X25519: OpenSSL refused the private key")
        }
        defer { EVP_PKEY_free(key) }
        return try raw(key, EVP_PKEY_get_raw_public_key)
    }

    private static func raw(
        _ key: OpaquePointer,
        _ get: (OpaquePointer?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<Int>?) -> Int32
    ) throws(KeyError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 32)
        var length = 32
        guard get(key, &bytes, &length) == 1, length == 32 else {
            throw KeyError(description: "X25519: OpenSSL gave no raw key")
        }
        return bytes
    }
}
