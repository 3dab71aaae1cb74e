import ATSPolicy
internal import COpenSSL
import POSIX

/// The anchors a verdict trusts, of Apple's three kinds (docs/ats-rules.md, "Default trust"): the OS
/// store and `--system-anchor` files stand for the system roots, `--ca-file` for roots the user or MDM
/// installed, `--app-anchor` for anchors the app sets itself with `SecTrustSetAnchorCertificates`. An
/// anchor may be a root, an intermediate or a leaf: a path may end at any of them.
package struct TrustAnchors: Sendable {
    package let systemRoots: Bool
    package let systemAnchors: [X509Certificate]
    package let userInstalled: [X509Certificate]
    package let appAnchors: [X509Certificate]
    /// Every anchor but the OS store's, by DER encoding: the kind a path's last certificate has.
    private let kinds: [[UInt8]: TrustAnchorKind]
    /// The store paths are built in: the OS store (looked up on demand) and every anchor above.
    let store: CertificateStore
    /// `--ct-log-list`: the CT logs SCTs are verified against; nil: SCTs are only counted.
    package let ctLogList: CTLogList?

    package init(
        systemRoots: Bool = true, systemAnchors: [X509Certificate] = [], userInstalled: [X509Certificate] = [],
        appAnchors: [X509Certificate] = [], ctLogList: CTLogList? = nil
    ) {
        self.ctLogList = ctLogList
        self.systemRoots = systemRoots
        self.systemAnchors = systemAnchors
        self.userInstalled = userInstalled
        self.appAnchors = appAnchors
        // A certificate given as more than one kind counts as the one the app chose, then the user's:
        // the narrower trust decision is the one Apple's code sees first (app anchors replace the
        // others for that trust object; a user's trust setting overrides the system store's).
        var kinds: [[UInt8]: TrustAnchorKind] = [:]
        for anchor in systemAnchors { kinds[anchor.der] = anchor.isAppleRoot ? .appleSystem : .system }
        for anchor in userInstalled { kinds[anchor.der] = .user }
        for anchor in appAnchors { kinds[anchor.der] = .app }
        self.kinds = kinds
        store = CertificateStore(systemRoots: systemRoots, anchors: systemAnchors + userInstalled + appAnchors)
    }

    /// Reads each file's certificates (PEM, or one DER certificate) as anchors of their kind.
    package static func loading(
        caFiles: [String], appAnchorFiles: [String] = [], systemAnchorFiles: [String] = [], systemRoots: Bool = true,
        ctLogList: CTLogList? = nil
    ) throws(TLSError) -> TrustAnchors {
        func read(_ files: [String], _ what: String) throws(TLSError) -> [X509Certificate] {
            var certificates: [X509Certificate] = []
            for file in files { certificates += try CertificateFile.read(file, what: what) }
            return certificates
        }
        return TrustAnchors(
            systemRoots: systemRoots, systemAnchors: try read(systemAnchorFiles, "system anchor file"),
            userInstalled: try read(caFiles, "CA file"), appAnchors: try read(appAnchorFiles, "app anchor file"),
            ctLogList: ctLogList)
    }

    /// The kind of an anchor a path ended at: one given as a file, or else a root of the OS store.
    func kind(of anchor: X509Certificate) -> TrustAnchorKind {
        kinds[anchor.der] ?? (anchor.isAppleRoot ? .appleSystem : .system)
    }
}

/// An `X509_STORE`: the single owner of it, freed in `deinit`. OpenSSL locks a store's lookups, so
/// one store serves every thread's path building.
final class CertificateStore: @unchecked Sendable {
    let raw: OpaquePointer

    init(systemRoots: Bool, anchors: [X509Certificate]) {
        guard let store = X509_STORE_new() else { fatalError("X509_STORE_new: out of memory") }
        raw = store
        // The OS store: the bundle file and the hashed directory, looked up as paths are built.
        if systemRoots { X509_STORE_set_default_paths(store) }
        for anchor in anchors { X509_STORE_add_cert(store, anchor.raw) }
        ERR_clear_error()
    }

    deinit { X509_STORE_free(raw) }
}

extension X509Certificate {
    /// Apple's own roots (Apple Root CA, G2 and G3, by the SHA-256 of their DER as Apple publishes them at
    /// apple.com/certificateauthority): system roots that Apple's CT rule exempts
    /// (SecPolicyCheckSystemTrustedCTRequired).
    var isAppleRoot: Bool { X509Certificate.appleRootFingerprints.contains(sha256Hex) }

    static let appleRootFingerprints: Set<String> = [
        "b0b1730ecbc7ff4505142c49f1295e6eda6bcaed7e2c68c5be91b5a11001f024",  // Apple Root CA
        "c2b9b042dd57830e7d117dac55ac8ae19407d38e41d88f3215bc3a890444a050",  // Apple Root CA - G2
        "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179",  // Apple Root CA - G3
    ]

    /// The SHA-256 of the DER encoding, in lowercase hex.
    package var sha256Hex: String {
        let bytes = der
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard EVP_Digest(bytes, bytes.count, &digest, &length, EVP_sha256(), nil) == 1 else { return "" }
        let hex = Array("0123456789abcdef")
        return String(digest.prefix(Int(length)).flatMap { [hex[Int($0 >> 4)], hex[Int($0 & 15)]] })
    }
}

/// Certificate files as the tools take them: PEM with one or more certificates, or one DER certificate.
package enum CertificateFile {
    /// Every certificate of `path`, in order; `what` names the file in errors ("CA file").
    package static func read(_ path: String, what: String) throws(TLSError) -> [X509Certificate] {
        let bytes: [UInt8]
        do { bytes = try FileBytes.read(path) } catch {
            throw TLSError(
                operation: "reading \(what) \(path)", openSSLErrors: ["cannot read the file: \(error.reason)"])
        }
        do {
            return try X509Certificate.certificates(encoded: bytes)
        } catch {
            throw TLSError(operation: "reading \(what) \(path)", openSSLErrors: error.openSSLErrors)
        }
    }
}

extension X509Certificate {
    /// PEM (every certificate in it) or DER (exactly one certificate, and nothing after it).
    package static func certificates(encoded bytes: [UInt8]) throws(TLSError) -> [X509Certificate] {
        // DER starts with a SEQUENCE tag; PEM is text.
        guard bytes.first == 0x30 else { return try certificates(pem: bytes) }
        let parsed: (OpaquePointer?, Int) = bytes.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            let certificate = d2i_X509(nil, &cursor, buffer.count)
            return (certificate, cursor.map { $0 - buffer.baseAddress! } ?? 0)
        }
        guard let certificate = parsed.0 else {
            throw TLSError(operation: "reading a DER certificate", openSSLErrors: TLSError.drainErrorQueue())
        }
        let result = X509Certificate(taking: certificate)
        guard parsed.1 == bytes.count else {
            throw TLSError(
                operation: "reading a DER certificate",
                openSSLErrors: ["\(bytes.count - parsed.1) bytes follow the certificate; a DER file holds one"])
        }
        return [result]
    }
}

/// Certificate and key files, read whole (at most 16 MiB: a PEM bundle of every public root is
/// under 1 MiB).
enum FileBytes {
    static func read(_ path: String) throws(FileReadError) -> [UInt8] {
        try FileContents.read(path, maximumSize: 16 << 20).bytes
    }
}
