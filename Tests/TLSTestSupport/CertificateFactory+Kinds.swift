import Foundation

/// The certificates the end-to-end server-kind tests need besides ``CertificateFactory/certificate``:
/// explicit validity dates, self-signed leaves, and SPKI pins.
extension CertificateFactory {
    /// A certificate `name.pem` signed by `issuer`, valid from `notBefore` to `notAfter` (UTC, to the
    /// second). OpenSSL 3.0's `x509` can only count days from now, so this goes through `openssl ca`
    /// with a throwaway CA configuration in the factory's directory.
    package func certificate(
        _ name: String, issuer: String, notBefore: Date, notAfter: Date, key spec: String = "rsa:2048",
        digest: String = "sha256", subject: String? = nil,
        extensions: [String] = ["subjectAltName=DNS:localhost", "extendedKeyUsage=serverAuth"]
    ) throws {
        try key(name, spec)
        try openssl(["req", "-new", "-key", "\(name).key", "-subj", subject ?? "/CN=\(name)", "-out", "\(name).csr"])
        try extensions.joined(separator: "\n").write(toFile: path("\(name).ext"), atomically: true, encoding: .utf8)
        let database = path("ca-index.txt")
        if !FileManager.default.fileExists(atPath: database) {
            _ = FileManager.default.createFile(atPath: database, contents: Data())
        }
        try """
        [ ca ]
        default_ca = test_ca
        [ test_ca ]
        database = ca-index.txt
        serial = ca-serial
        new_certs_dir = .
        default_md = sha256
        policy = any_subject
        unique_subject = no
        email_in_dn = no
        [ any_subject ]
        commonName = optional
        """.write(toFile: path("ca.cnf"), atomically: true, encoding: .utf8)
        try openssl([
            "ca", "-batch", "-config", "ca.cnf", "-cert", "\(issuer).pem", "-keyfile", "\(issuer).key",
            "-in", "\(name).csr", "-out", "\(name).pem", "-md", digest, "-notext", "-create_serial",
            "-startdate", Self.generalizedTime(notBefore), "-enddate", Self.generalizedTime(notAfter),
            "-extfile", "\(name).ext",
        ])
    }

    /// A self-signed certificate `name.pem` (key `name.key`) that is not a CA: a server that signs its
    /// own leaf.
    package func selfSignedLeaf(
        _ name: String, key spec: String = "rsa:2048", days: Int = 90,
        extensions: [String] = ["subjectAltName=DNS:localhost", "extendedKeyUsage=serverAuth"]
    ) throws {
        try key(name, spec)
        var arguments = [
            "req", "-x509", "-new", "-key", "\(name).key", "-sha256", "-days", "\(days)", "-subj", "/CN=\(name)",
        ]
        for line in extensions + ["basicConstraints=critical,CA:FALSE"] { arguments += ["-addext", line] }
        try openssl(arguments + ["-out", "\(name).pem"])
    }

    /// base64(SHA-256(DER SubjectPublicKeyInfo)) of `name.key`: the `SPKI-SHA256-BASE64` value of
    /// NSPinnedDomains, computed with the openssl recipe Apple documents.
    package func spkiSHA256Base64(key name: String) throws -> String {
        let der = try openssl(["pkey", "-in", "\(name).key", "-pubout", "-outform", "DER"])
        return try openssl(["dgst", "-sha256", "-binary"], input: der).base64EncodedString()
    }

    /// Diffie-Hellman parameters `name.pem` (the RFC 7919 ffdhe2048 group, so nothing is generated) for
    /// an s_server that offers DHE suites (`-dhparam`).
    package func dhParameters(_ name: String) throws {
        try openssl(["genpkey", "-genparam", "-algorithm", "DH", "-pkeyopt", "group:ffdhe2048", "-out", "\(name).pem"])
    }

    /// `YYYYMMDDHHMMSSZ`, the form `openssl ca -startdate/-enddate` takes.
    static func generalizedTime(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMddHHmmss'Z'"
        return formatter.string(from: date)
    }
}
