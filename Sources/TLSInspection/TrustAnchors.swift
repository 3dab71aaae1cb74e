internal import COpenSSL
import POSIX

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
            let bytes: [UInt8]
            do { bytes = try FileBytes.read(file) } catch {
                throw TLSError(
                    operation: "reading CA file \(file)", openSSLErrors: ["cannot read the file: \(error.reason)"])
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

/// Certificate and key files, read whole (at most 16 MiB: a PEM bundle of every public root is
/// under 1 MiB).
enum FileBytes {
    static func read(_ path: String) throws(FileReadError) -> [UInt8] {
        try FileContents.read(path, maximumSize: 16 << 20).bytes
    }
}
