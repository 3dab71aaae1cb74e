import Foundation
import TLSInspection
import TLSTestSupport
import Testing

/// A scratch directory with a CA made by ``CertificateAuthority/create`` in `ca/`, and openssl
/// runnable in the directory (through ``CertificateFactory``, which removes it when done).
final class AuthorityScratch {
    let factory: CertificateFactory
    var directory: String { factory.directory }
    var caDirectory: String { factory.path("ca") }

    init() throws { factory = try CertificateFactory() }

    func createCA(keyType: PrivateKey.Kind = .ecdsaP256, commonName: String = "atsproxy CA (test)") throws
        -> CertificateAuthority
    {
        try CertificateAuthority.create(in: caDirectory, keyType: keyType, commonName: commonName)
    }

    /// Writes `bytes` to `name` in the scratch directory and returns its path.
    @discardableResult
    func write(_ name: String, _ bytes: [UInt8]) throws -> String {
        let path = factory.path(name)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// `openssl ARGUMENTS` in the scratch directory: status, stdout and stderr, not thrown.
    func openssl(_ arguments: [String], input: Data? = nil) throws -> CommandResult {
        try runCommand("/usr/bin/openssl", arguments, input: input, directory: directory)
    }

    /// `openssl x509 -text -noout` of a PEM file.
    func text(_ pemFile: String) throws -> String {
        String(decoding: try factory.openssl(["x509", "-in", pemFile, "-text", "-noout"]), as: UTF8.self)
    }

    /// The permission bits of a file or directory.
    func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }
}

/// Seconds since 1970, now.
var secondsNow: Int64 { Int64(Date.now.timeIntervalSince1970) }
