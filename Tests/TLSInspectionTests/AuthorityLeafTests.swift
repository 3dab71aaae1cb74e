import ATSPolicy
import Foundation
import TLSInspection
import TLSTestSupport
import Testing

/// Leaves minted by ``LeafMinter``: their profile as openssl reads it, openssl's verdict on them
/// as server certificates, hostile names, and a whole handshake an ATS client accepts.
@Suite("Leaf minting under the proxy's CA", .startsProcesses(timeLimit: .seconds(120)))
struct LeafMinterTests {
    /// One name to mint for, and how openssl must check the leaf.
    struct Name: Sendable, CustomTestStringConvertible {
        var name: LeafName
        var verifyFlags: [String]
        /// The SAN line of `openssl x509 -text`.
        var san: String
        var commonName: String?
        var testDescription: String { name.description }
    }

    static let longHost = String(repeating: "a", count: 60) + ".example.test"

    static let names: [Name] = [
        Name(
            name: .dns("api.example.test"), verifyFlags: ["-verify_hostname", "api.example.test"],
            san: "DNS:api.example.test", commonName: "api.example.test"),
        Name(name: LeafName(host: "192.0.2.7"), verifyFlags: ["-verify_ip", "192.0.2.7"], san: "IP Address:192.0.2.7"),
        Name(
            name: LeafName(host: "[2001:db8::7]"), verifyFlags: ["-verify_ip", "2001:db8::7"],
            san: "IP Address:2001:DB8:0:0:0:0:0:7"),
        // Over 64 characters: no CN, so the SAN is critical.
        Name(name: .dns(longHost), verifyFlags: ["-verify_hostname", longHost], san: "DNS:\(longHost)"),
    ]

    @Test("openssl verifies the leaf as an SSL server for its name and reads the profile", arguments: names)
    func profile(_ row: Name) throws {
        let scratch = try AuthorityScratch()
        let authority = try scratch.createCA()
        let minter = try LeafMinter(authority: authority)
        let now = secondsNow
        let minted = try minter.mint(for: row.name, now: now)
        #expect(minted.credentials.chain.count == 1, "the leaf alone")
        #expect(minted.credentials.key === minter.leafKey)
        let leafFile = try scratch.write("leaf.pem", minted.credentials.chain[0].pem)

        let verify = try scratch.openssl(
            ["verify", "-CAfile", authority.certificatePath, "-purpose", "sslserver", "-x509_strict"] + row.verifyFlags
                + [leafFile])
        #expect(
            verify.status == 0 && verify.standardOutput == "\(leafFile): OK\n",
            "\(verify.standardOutput)\(verify.standardError)")

        let text = try scratch.text(leafFile)
        #expect(text.contains("Version: 3 (0x2)"))
        #expect(text.contains("Signature Algorithm: ecdsa-with-SHA256"))
        #expect(text.contains("NIST CURVE: P-256"))
        #expect(text.contains("Issuer: O = atsproxy, CN = atsproxy CA (test)"))
        if let commonName = row.commonName {
            #expect(text.contains("Subject: CN = \(commonName)\n"), "\(text)")
            #expect(text.contains("X509v3 Subject Alternative Name: \n                \(row.san)\n"), "\(text)")
        } else {
            #expect(text.contains("Subject: \n") || !text.contains("Subject: CN"), "no CN: \(text)")
            #expect(text.contains("X509v3 Subject Alternative Name: critical\n                \(row.san)\n"), "\(text)")
        }
        #expect(text.contains("X509v3 Basic Constraints: critical\n                CA:FALSE"))
        #expect(text.contains("X509v3 Key Usage: critical\n                Digital Signature\n"))
        #expect(text.contains("X509v3 Extended Key Usage: \n                TLS Web Server Authentication\n"))
        #expect(text.contains("X509v3 Authority Key Identifier"))
        #expect(!text.contains("X509v3 Subject Key Identifier"), "no leaf SKI (SChannel)")
        // Back-dated two days, 199 days in all: under Apple's 825 and the CA/B Forum's 200.
        let leaf = minted.credentials.chain[0]
        #expect(leaf.notBefore == now - 2 * 86_400)
        #expect(leaf.notAfter == leaf.notBefore + 199 * 86_400)
        #expect(minted.notBefore == leaf.notBefore && minted.notAfter == leaf.notAfter)
        #expect(leaf.notAfter - leaf.notBefore <= 825 * 86_400)
        let serial = try #require(
            scratch.openssl(["x509", "-in", leafFile, "-noout", "-serial"]).standardOutput
                .split(separator: "=").last?.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(serial.count == 32 && serial.first! < "8", "16 bytes, top bit clear: \(serial)")
        // ATS's own judgement of the certificate's facts.
        let facts = leaf.facts
        #expect(facts.extendedKeyUsage == [.serverAuth])
        #expect(facts.signatureHash == .sha256)
    }

    @Test("an RSA CA signs the same P-256 leaves, sha256WithRSAEncryption")
    func rsaAuthority() throws {
        let scratch = try AuthorityScratch()
        let authority = try scratch.createCA(keyType: .rsa2048)
        let minted = try LeafMinter(authority: authority).mint(for: .dns("rsa.example.test"), now: secondsNow)
        let leafFile = try scratch.write("leaf.pem", minted.credentials.chain[0].pem)
        let verify = try scratch.openssl([
            "verify", "-CAfile", authority.certificatePath, "-purpose", "sslserver", leafFile,
        ])
        #expect(verify.status == 0, "\(verify.standardError)")
        #expect(try scratch.text(leafFile).contains("Signature Algorithm: sha256WithRSAEncryption"))
    }

    @Test("serials differ between leaves, and the leaf key is never the CA's")
    func serialsAndKeys() throws {
        let scratch = try AuthorityScratch()
        let minter = try LeafMinter(authority: scratch.createCA())
        let leaves = try (0..<20).map { _ in try minter.mint(for: .dns("same.example.test"), now: secondsNow) }
        #expect(Set(leaves.map { $0.credentials.chain[0].der }).count == 20)
        #expect(Set(leaves.map { $0.credentials.chain[0].spkiSHA256 }).count == 1, "one leaf key")
        #expect(leaves[0].credentials.chain[0].spkiSHA256 != minter.authority.certificate.spkiSHA256)
    }

    static let hostileNames: [String] = [
        "a.test,DNS:evil.test", "a.test\u{0}evil.test", "a.test\nDNS:evil.test", "a.test, DNS:evil.test", "a test",
        "*.a.test", "a..test", ".a.test", "a.test.", "", "é.test", "a.test/evil", String(repeating: "a", count: 254),
    ]

    @Test("a hostile or malformed SNI is refused, never certified as two names", arguments: hostileNames)
    func hostileName(_ host: String) throws {
        let scratch = try AuthorityScratch()
        let minter = try LeafMinter(authority: scratch.createCA())
        let error = #expect(throws: TLSError.self) { try minter.mint(for: .dns(host), now: secondsNow) }
        #expect(error?.operation.hasPrefix("minting a leaf for ") == true)
        #expect(error?.description.contains("\n") == false, "the name is escaped in the message")
    }

    @Test(
        "an IP name of the wrong length is refused",
        arguments: [[UInt8](), [1, 2, 3], [UInt8](repeating: 1, count: 5)])
    func badAddress(_ bytes: [UInt8]) throws {
        let scratch = try AuthorityScratch()
        let minter = try LeafMinter(authority: scratch.createCA())
        #expect(throws: TLSError.self) { try minter.mint(for: .ip(bytes: bytes), now: secondsNow) }
    }

    @Test("names parse: IPv4 and IPv6 literals (bracketed too) are addresses, the rest host names")
    func parsing() {
        #expect(LeafName(host: "192.0.2.7") == .ip(bytes: [192, 0, 2, 7]))
        #expect(LeafName(host: "::1") == .ip(bytes: [UInt8](repeating: 0, count: 15) + [1]))
        #expect(LeafName(host: "[::1]") == LeafName(host: "::1"))
        #expect(LeafName(host: "example.test") == .dns("example.test"))
        #expect(LeafName(host: "192.0.2.7").description == "192.0.2.7")
        #expect(LeafName(host: "2001:db8::7").description == "2001:db8::7")
    }

    @Test("a minted leaf on a context without credentials: an ATS client trusting the CA completes the handshake")
    func handshake() throws {
        let scratch = try AuthorityScratch()
        let authority = try scratch.createCA()
        let minter = try LeafMinter(authority: authority)
        let anchors = TrustAnchors(systemRoots: false, userInstalled: [authority.certificate])
        let host = "api.example.test"
        let policy = try PolicyLoader.load(bytes: Array("<plist version=\"1.0\"><dict/></plist>".utf8), file: "t.plist")
        let requirements = try policy.requirements(forHost: host)
        let clientContext = try TLSClientContext(profile: ClientProfile.ats(for: requirements), anchors: anchors)
        let serverContext = try TLSServerContext()

        let minted = try minter.mint(for: .dns(host), now: secondsNow)
        let pair = try StreamPair(
            client: clientContext, server: serverContext, serverName: host, credentials: minted.credentials)
        let (client, server) = pair.handshake()
        #expect(client == .complete && server == .complete, "client \(client), server \(server)")
        let observed = try #require(pair.client.outcome(now: secondsNow).observed)
        #expect(observed.trust == .userInstalledRoot, "\(observed.trust)")
        let verdict = policy.verdict(for: requirements, observed: observed)
        #expect(verdict.isCompliant, "ATS accepts the leaf: \(verdict.violations)")
        #expect(observed.chain.map(\.subject) == ["CN=\(host)", "CN=atsproxy CA (test),O=atsproxy"])
        #expect(pair.server.serverName == host)
        try pair.client.write(Array("ping".utf8))
        #expect(try pair.server.readAvailable().bytes == Array("ping".utf8))

        // The judgement checks the name: another host's leaf is a violation for this one.
        let other = try minter.mint(for: .dns("other.example.test"), now: secondsNow)
        let wrong = try StreamPair(
            client: clientContext, server: serverContext, serverName: host, credentials: other.credentials)
        #expect(wrong.handshake() == (.complete, .complete))
        let wrongObserved = try #require(wrong.client.outcome(now: secondsNow).observed)
        #expect(!policy.verdict(for: requirements, observed: wrongObserved).isCompliant)
    }

    @Test("the credentials' key, written as PKCS #8, is the public key in the minted leaf")
    func keyFiles() throws {
        let scratch = try AuthorityScratch()
        let authority = try scratch.createCA()
        let minted = try LeafMinter(authority: authority).mint(for: .dns("files.example.test"), now: secondsNow)
        let leafFile = try scratch.write("leaf.pem", minted.credentials.chain[0].pem)
        let keyFile = try scratch.write("leaf.key", minted.credentials.key.pkcs8PEM)
        let check = try scratch.openssl(["x509", "-in", leafFile, "-noout", "-checkend", "0"])
        #expect(check.status == 0)
        let pair = try scratch.openssl(["pkey", "-in", keyFile, "-pubout"]).standardOutput
        let fromLeaf = try scratch.openssl(["x509", "-in", leafFile, "-noout", "-pubkey"]).standardOutput
        #expect(pair == fromLeaf, "the leaf's key is the one handed out")
    }
}
