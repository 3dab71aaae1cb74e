internal import COpenSSL

/// The roots a probe trusts: the OS store (Apple's "system roots" stand-in) and any `--ca-file`
/// anchors, which ATS treats as user-installed roots (exempt from CT, 825-day limit).
package struct TrustAnchors: Sendable {
    package let systemRoots: Bool
    package let userInstalled: [X509Certificate]
    /// The anchors' encodings, computed once: every probe asks whether its root is one of them.
    private let userInstalledDER: Set<[UInt8]>

    package init(systemRoots: Bool = true, userInstalled: [X509Certificate] = []) {
        self.systemRoots = systemRoots
        self.userInstalled = userInstalled
        self.userInstalledDER = Set(userInstalled.map(\.der))
    }

    /// Reads every certificate of each PEM file as a user-installed anchor.
    package static func loading(caFiles: [String], systemRoots: Bool = true) throws(TLSError) -> TrustAnchors {
        var anchors: [X509Certificate] = []
        for file in caFiles {
            guard let bytes = FileBytes.read(file) else {
                throw TLSError(operation: "reading CA file \(file)", openSSLErrors: ["cannot read the file"])
            }
            do {
                anchors += try X509Certificate.certificates(pem: bytes)
            } catch {
                throw TLSError(operation: "reading CA file \(file)", openSSLErrors: error.openSSLErrors)
            }
        }
        return TrustAnchors(systemRoots: systemRoots, userInstalled: anchors)
    }

    /// Installs the anchors into a context's certificate store.
    func install(into context: OpaquePointer) {
        if systemRoots { SSL_CTX_set_default_verify_paths(context) }
        let store = SSL_CTX_get_cert_store(context)
        for anchor in userInstalled { X509_STORE_add_cert(store, anchor.raw) }
    }

    /// Whether `certificate` is one of the user-installed anchors.
    func isUserInstalled(_ certificate: X509Certificate) -> Bool {
        userInstalledDER.contains(certificate.der)
    }
}

/// Whole-file reads without Foundation, for CA files.
enum FileBytes {
    static func read(_ path: String) -> [UInt8]? {
        guard let bio = BIO_new_file(path, "rb") else {
            ERR_clear_error()
            return nil
        }
        defer { BIO_free(bio) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = BIO_read(bio, &chunk, Int32(chunk.count))
            if count <= 0 { break }
            bytes += chunk[0..<Int(count)]
        }
        return bytes
    }
}
