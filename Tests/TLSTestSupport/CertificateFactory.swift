import Foundation
import Testing

/// Mints real certificates with the `openssl` command line in a scratch directory: test servers and
/// test chains are made at test time, never committed (keys included).
package final class CertificateFactory {
    package let directory: String

    package init() throws {
        directory = FileManager.default.temporaryDirectory.path + "/atsproxy-certs-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    package func path(_ name: String) -> String { directory + "/" + name }

    /// Runs openssl with `arguments` in the directory, `input` on its standard input; throws with
    /// its stderr on failure (a hung openssl is killed after a minute: see ``runCommand``).
    @discardableResult
    package func openssl(_ arguments: [String], input: Data? = nil) throws -> Data {
        let result = try runCommand("/usr/bin/openssl", arguments, input: input, directory: directory)
        guard result.status == 0 else {
            throw FactoryError(message: "openssl \(arguments.joined(separator: " ")): " + result.standardError)
        }
        return result.standardOutputBytes
    }

    package struct FactoryError: Error, CustomStringConvertible {
        package var message: String
        package var description: String { message }
    }

    /// A key: "rsa:2048", "rsa:1024", "ec:P-256", "ed25519".
    package func key(_ name: String, _ spec: String) throws {
        let parts = spec.split(separator: ":").map(String.init)
        switch parts[0] {
        case "rsa":
            try openssl([
                "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:\(parts[1])", "-out", "\(name).key",
            ])
        case "ec":
            try openssl([
                "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:\(parts[1])", "-out", "\(name).key",
            ])
        default: try openssl(["genpkey", "-algorithm", parts[0].uppercased(), "-out", "\(name).key"])
        }
    }

    /// A self-signed CA certificate `name.pem` with key `name.key`.
    package func rootCA(_ name: String, key spec: String = "rsa:2048", digest: String = "sha256", days: Int = 3650)
        throws
    {
        try key(name, spec)
        try openssl([
            "req", "-x509", "-new", "-key", "\(name).key", "-\(digest)", "-days", "\(days)", "-subj", "/CN=\(name)",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            "-out", "\(name).pem",
        ])
    }

    /// A certificate `name.pem` signed by `issuer` (whose `.pem` and `.key` exist), with extensions.
    package func certificate(
        _ name: String, issuer: String, key spec: String = "rsa:2048", digest: String = "sha256", days: Int = 90,
        subject: String? = nil,
        extensions: [String] = ["subjectAltName=DNS:example.com", "extendedKeyUsage=serverAuth"],
        isCA: Bool = false
    ) throws {
        try key(name, spec)
        try openssl(["req", "-new", "-key", "\(name).key", "-subj", subject ?? "/CN=\(name)", "-out", "\(name).csr"])
        var lines = extensions
        if isCA { lines += ["basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign"] }
        try lines.joined(separator: "\n").write(toFile: path("\(name).ext"), atomically: true, encoding: .utf8)
        try openssl([
            "x509", "-req", "-in", "\(name).csr", "-CA", "\(issuer).pem", "-CAkey", "\(issuer).key",
            "-CAcreateserial", "-\(digest)", "-days", "\(days)", "-extfile", "\(name).ext", "-out", "\(name).pem",
        ])
    }

    /// The bytes of a file in the directory.
    package func bytes(_ file: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path(file))))
    }

    package func pem(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path("\(name).pem"))))
    }
}
