import Foundation
import TLSInspection
import TLSTestSupport
import Testing

/// The proxy's CA: what `create` writes, what `load` accepts and refuses (naming the file), and
/// the exports a device installs, each checked with the real openssl and python's plistlib.
@Suite("Authority: the proxy's CA", .startsProcesses(timeLimit: .seconds(120)))
struct AuthorityTests {
    @Test(
        "create writes a 10-year CA:TRUE keyCertSign root with a CN, ca.key 0600 PKCS #8, ca.pem 0644, dir 0700",
        arguments: [PrivateKey.Kind.ecdsaP256, .rsa2048])
    func create(keyType: PrivateKey.Kind) throws {
        let scratch = try AuthorityScratch()
        let before = secondsNow
        let authority = try scratch.createCA(keyType: keyType)
        #expect(try scratch.mode(scratch.caDirectory) == 0o700)
        #expect(try scratch.mode(authority.keyPath) == 0o600)
        #expect(try scratch.mode(authority.certificatePath) == 0o644)
        let keyText = try String(contentsOfFile: authority.keyPath, encoding: .utf8)
        #expect(keyText.hasPrefix("-----BEGIN PRIVATE KEY-----\n"), "PKCS #8")
        let certificateText = try String(contentsOfFile: authority.certificatePath, encoding: .utf8)
        #expect(certificateText.hasPrefix("-----BEGIN CERTIFICATE-----\n") && !certificateText.contains("PRIVATE"))

        let text = try scratch.text(authority.certificatePath)
        #expect(text.contains("Version: 3 (0x2)"))
        #expect(text.contains("Subject: O = atsproxy, CN = atsproxy CA (test)"), "\(text)")
        #expect(text.contains("X509v3 Basic Constraints: critical\n                CA:TRUE, pathlen:0"), "\(text)")
        #expect(text.contains("X509v3 Key Usage: critical\n                Certificate Sign, CRL Sign"), "\(text)")
        #expect(text.contains("X509v3 Subject Key Identifier"))
        #expect(
            text.contains(
                keyType == .rsa2048
                    ? "Signature Algorithm: sha256WithRSAEncryption" : "Signature Algorithm: ecdsa-with-SHA256"))
        #expect(text.contains(keyType == .rsa2048 ? "Public-Key: (2048 bit)" : "NIST CURVE: P-256"))
        let serial = try #require(
            scratch.openssl(["x509", "-in", authority.certificatePath, "-noout", "-serial"]).standardOutput
                .split(separator: "=").last?.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(serial.count == 32 && serial.first! < "8", "16 bytes, positive: \(serial)")
        // Back-dated one day, valid 3650 days.
        #expect(abs(authority.notBefore - (before - 86_400)) <= 5)
        #expect(authority.notAfter - authority.notBefore == 3650 * 86_400)
        #expect(authority.subject == "CN=atsproxy CA (test),O=atsproxy")
        #expect(authority.certificate.isSelfSigned)
        // The key reads back and belongs to the certificate.
        #expect(try scratch.openssl(["pkey", "-in", authority.keyPath, "-noout"]).status == 0)
        let loaded = try CertificateAuthority.load(from: scratch.caDirectory)
        #expect(loaded.sha256Fingerprint == authority.sha256Fingerprint)
    }

    @Test("the default CN names atsproxy and this host, within 64 characters")
    func defaultCommonName() {
        let name = CertificateAuthority.defaultCommonName
        #expect(name.hasPrefix("atsproxy CA (") && name.hasSuffix(")") && name.count <= 64)
    }

    @Test("create refuses to replace a CA, naming the file, unless forced; parents are made")
    func refusesOverwrite() throws {
        let scratch = try AuthorityScratch()
        let first = try scratch.createCA()
        let refused = #expect(throws: CertificateAuthorityError.self) { try scratch.createCA() }
        #expect(refused?.path == first.certificatePath, "\(String(describing: refused))")
        #expect(refused?.description.contains("already exists") == true)
        #expect(try CertificateAuthority.load(from: scratch.caDirectory).sha256Fingerprint == first.sha256Fingerprint)
        let second = try CertificateAuthority.create(in: scratch.caDirectory, commonName: "again", force: true)
        #expect(second.sha256Fingerprint != first.sha256Fingerprint)
        #expect(try scratch.mode(second.keyPath) == 0o600)
        #expect(try CertificateAuthority.load(from: scratch.caDirectory).sha256Fingerprint == second.sha256Fingerprint)
        let nested = try CertificateAuthority.create(in: scratch.directory + "/a/b/ca", commonName: "nested")
        #expect(try scratch.mode(nested.directory) == 0o700)
    }

    /// One way a CA directory can be wrong, the file the error must name, and words it must say.
    struct BadDirectory: Sendable, CustomTestStringConvertible {
        var name: String
        var file: String
        var words: String
        var spoil: @Sendable (AuthorityScratch) throws -> Void
        var testDescription: String { name }
    }

    static let badDirectories: [BadDirectory] = [
        BadDirectory(
            name: "ca.key readable by others", file: "ca.key",
            words: "refusing ca.key readable by group or others (mode 0644): chmod 600"
        ) { scratch in
            try FileManager.default.setAttributes(
                [.posixPermissions: 0o644], ofItemAtPath: scratch.caDirectory + "/ca.key")
        },
        BadDirectory(name: "ca.key readable by the group", file: "ca.key", words: "(mode 0640)") { scratch in
            try FileManager.default.setAttributes(
                [.posixPermissions: 0o640], ofItemAtPath: scratch.caDirectory + "/ca.key")
        },
        BadDirectory(name: "no ca.key", file: "ca.key", words: "no such file") { scratch in
            try FileManager.default.removeItem(atPath: scratch.caDirectory + "/ca.key")
        },
        BadDirectory(name: "no ca.pem", file: "ca.pem", words: "no such file") { scratch in
            try FileManager.default.removeItem(atPath: scratch.caDirectory + "/ca.pem")
        },
        BadDirectory(name: "ca.pem not PEM", file: "ca.pem", words: "not PEM") { scratch in
            try Data("hello\n".utf8).write(to: URL(fileURLWithPath: scratch.caDirectory + "/ca.pem"))
        },
        BadDirectory(name: "ca.key not PEM", file: "ca.key", words: "not PEM") { scratch in
            try Data("hello\n".utf8).write(to: URL(fileURLWithPath: scratch.caDirectory + "/ca.key"))
        },
        BadDirectory(name: "ca.key unreadable (a directory)", file: "ca.key", words: "cannot read") { scratch in
            let key = scratch.caDirectory + "/ca.key"
            try FileManager.default.removeItem(atPath: key)
            try FileManager.default.createDirectory(
                atPath: key, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        },
        BadDirectory(name: "another CA's key", file: "ca.key", words: "not the private key of") { scratch in
            let other = try CertificateAuthority.create(in: scratch.directory + "/other", commonName: "other")
            try FileManager.default.removeItem(atPath: scratch.caDirectory + "/ca.key")
            try FileManager.default.copyItem(atPath: other.keyPath, toPath: scratch.caDirectory + "/ca.key")
        },
        BadDirectory(name: "a leaf certificate (no CA:TRUE)", file: "ca.pem", words: "basicConstraints lacks CA:TRUE") {
            scratch in
            try scratch.factory.rootCA("root", key: "ec:P-256")
            try scratch.factory.certificate("leaf", issuer: "root", key: "ec:P-256")
            try replace(scratch, certificate: "leaf.pem", key: "leaf.key")
        },
        BadDirectory(name: "CA:TRUE without keyCertSign", file: "ca.pem", words: "keyUsage lacks keyCertSign") {
            scratch in
            try scratch.factory.key("nosign", "ec:P-256")
            try scratch.factory.openssl([
                "req", "-x509", "-new", "-key", "nosign.key", "-sha256", "-days", "30", "-subj", "/CN=nosign",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,digitalSignature",
                "-out", "nosign.pem",
            ])
            try replace(scratch, certificate: "nosign.pem", key: "nosign.key")
        },
        BadDirectory(name: "an expired CA", file: "ca.pem", words: "expired") { scratch in
            // Made eleven years ago: its ten years are over.
            _ = try CertificateAuthority.create(
                in: scratch.caDirectory, commonName: "old", force: true, now: secondsNow - 11 * 365 * 86_400)
        },
    ]

    /// Puts a certificate and key made by openssl in place of the CA's (the key 0600).
    static func replace(_ scratch: AuthorityScratch, certificate: String, key: String) throws {
        for name in ["ca.pem", "ca.key"] {
            try FileManager.default.removeItem(atPath: scratch.caDirectory + "/" + name)
        }
        try FileManager.default.copyItem(
            atPath: scratch.factory.path(certificate), toPath: scratch.caDirectory + "/ca.pem")
        try FileManager.default.copyItem(atPath: scratch.factory.path(key), toPath: scratch.caDirectory + "/ca.key")
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: scratch.caDirectory + "/ca.key")
    }

    @Test("load refuses a bad CA directory, naming the file and what is wrong", arguments: badDirectories)
    func loadRefuses(_ row: BadDirectory) throws {
        let scratch = try AuthorityScratch()
        _ = try scratch.createCA()
        try row.spoil(scratch)
        let error = #expect(throws: CertificateAuthorityError.self) {
            try CertificateAuthority.load(from: scratch.caDirectory)
        }
        #expect(error?.path == scratch.caDirectory + "/" + row.file, "\(String(describing: error))")
        #expect(error?.description.hasPrefix(scratch.caDirectory + "/" + row.file + ": ") == true)
        #expect(error?.description.contains(row.words) == true, "\(String(describing: error))")
    }

    @Test("load refuses a CA past its notAfter at the time given")
    func loadExpiredByClock() throws {
        let scratch = try AuthorityScratch()
        let authority = try scratch.createCA()
        let error = #expect(throws: CertificateAuthorityError.self) {
            try CertificateAuthority.load(from: scratch.caDirectory, now: authority.notAfter + 1)
        }
        #expect(error?.description.contains("expired") == true)
    }

    @Test("exports: PEM is ca.pem, DER and fingerprints match openssl's")
    func exports() throws {
        let scratch = try AuthorityScratch()
        let authority = try scratch.createCA()
        #expect(try authority.pem == Array(Data(contentsOf: URL(fileURLWithPath: authority.certificatePath))))
        let der = try scratch.factory.openssl(["x509", "-in", authority.certificatePath, "-outform", "der"])
        #expect(authority.der == Array(der))
        for (flag, value) in [("-sha256", authority.sha256Fingerprint), ("-sha1", authority.sha1Fingerprint)] {
            let printed = try scratch.openssl([
                "x509", "-in", authority.certificatePath, "-noout", "-fingerprint", flag,
            ])
            #expect(printed.standardOutput.hasSuffix("Fingerprint=\(value)\n"), "\(printed.standardOutput) vs \(value)")
        }
    }

    @Test("mobileconfig: a plist with one com.apple.security.root payload holding the DER, the same bytes every time")
    func mobileConfig() throws {
        let scratch = try AuthorityScratch()
        let authority = try scratch.createCA(commonName: "atsproxy CA <a&b> \"q\"")
        let profile = authority.mobileConfig()
        #expect(profile == authority.mobileConfig(), "stable bytes")
        let reloaded = try CertificateAuthority.load(from: scratch.caDirectory)
        #expect(reloaded.mobileConfig() == profile, "stable across loads")
        let script = """
            import plistlib, sys, json, base64
            p = plistlib.load(sys.stdin.buffer)
            c = p["PayloadContent"]
            r = c[0]
            print(json.dumps({"type": p["PayloadType"], "version": p["PayloadVersion"], "id": p["PayloadIdentifier"],
              "uuid": p["PayloadUUID"], "name": p["PayloadDisplayName"], "description": p["PayloadDescription"],
              "count": len(c), "rtype": r["PayloadType"], "rversion": r["PayloadVersion"], "rid": r["PayloadIdentifier"],
              "ruuid": r["PayloadUUID"], "file": r["PayloadCertificateFileName"],
              "der": base64.b64encode(r["PayloadContent"]).decode()}))
            """
        let parsed = try runCommand("/usr/bin/python3", ["-c", script], input: Data(profile))
        #expect(parsed.status == 0, "\(parsed.standardError)")
        let fields = try #require(
            JSONSerialization.jsonObject(with: Data(parsed.standardOutput.utf8)) as? [String: Any])
        #expect(fields["type"] as? String == "Configuration")
        #expect(fields["version"] as? Int == 1)
        #expect(fields["count"] as? Int == 1)
        #expect(fields["rtype"] as? String == "com.apple.security.root")
        #expect(fields["rversion"] as? Int == 1)
        #expect(fields["file"] as? String == "atsproxy-ca.cer")
        #expect(fields["name"] as? String == "atsproxy: atsproxy CA <a&b> \"q\"", "escaped and read back")
        let description = try #require(fields["description"] as? String)
        #expect(description.contains("Settings → General → About → Certificate Trust Settings"))
        #expect(fields["id"] as? String != fields["rid"] as? String)
        let uuid = /^[0-9A-F]{8}-[0-9A-F]{4}-8[0-9A-F]{3}-[89AB][0-9A-F]{3}-[0-9A-F]{12}$/
        for key in ["uuid", "ruuid"] {
            #expect((fields[key] as? String)?.wholeMatch(of: uuid) != nil, "\(key): \(String(describing: fields[key]))")
        }
        #expect(fields["uuid"] as? String != fields["ruuid"] as? String)
        let der = try scratch.factory.openssl(["x509", "-in", authority.certificatePath, "-outform", "der"])
        #expect(fields["der"] as? String == der.base64EncodedString())
    }
}
