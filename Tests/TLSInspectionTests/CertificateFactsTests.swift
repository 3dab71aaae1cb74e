import ATSPolicy
import Foundation
import TLSInspection
import TLSTestSupport
import Testing

@Suite("Certificate facts from real certificates", .startsProcesses(timeLimit: .seconds(60)))
struct CertificateFactsTests {
    @Test("an RSA leaf signed by a CA: key, hash, dates, SANs, EKU, not self-signed")
    func rsaLeaf() throws {
        let factory = try CertificateFactory()
        try factory.rootCA("root")
        try factory.certificate(
            "leaf", issuer: "root", days: 90,
            extensions: [
                "subjectAltName=DNS:example.com,DNS:*.example.com,IP:127.0.0.1,IP:::1", "extendedKeyUsage=serverAuth",
            ])
        let leaf = try #require(try X509Certificate.certificates(pem: try factory.pem("leaf")).first)
        let facts = leaf.facts
        #expect(facts.subject == "CN=leaf")
        #expect(facts.keyType == .rsa)
        #expect(facts.keyBits == 2048)
        #expect(facts.signatureAlgorithm == "sha256WithRSAEncryption")
        #expect(facts.signatureHash == .sha256)
        #expect(facts.dnsNames == ["example.com", "*.example.com"])
        #expect(facts.ipAddresses == [IPAddress("127.0.0.1")!, IPAddress("::1")!])
        #expect(facts.extendedKeyUsage == [.serverAuth])
        #expect(!facts.isSelfSigned)
        let lifetime = facts.notAfter - facts.notBefore
        #expect(lifetime == 90 * 86_400)
        let now = Int64(Date().timeIntervalSince1970)
        #expect(abs(facts.notBefore - now) < 600)
    }

    @Test(
        "key types and sizes",
        arguments: [
            ("rsa:1024", CertificateFacts.KeyType.rsa, 1024), ("rsa:3072", .rsa, 3072), ("ec:P-256", .ec, 256),
            ("ec:P-384", .ec, 384), ("ed25519", .ed25519, 256),
        ])
    func keyTypes(_ spec: String, _ type: CertificateFacts.KeyType, _ bits: Int) throws {
        let factory = try CertificateFactory()
        try factory.rootCA("root", key: spec)
        let facts = try #require(try X509Certificate.certificates(pem: try factory.pem("root")).first).facts
        #expect(facts.keyType == type)
        #expect(facts.keyBits == bits)
        #expect(facts.isSelfSigned)
        #expect(facts.signatureHash == (type == .ed25519 ? .intrinsic : .sha256))
    }

    @Test(
        "signature hashes",
        arguments: [("sha1", CertificateFacts.SignatureHash.sha1), ("sha384", .sha384), ("sha512", .sha512)])
    func signatureHashes(_ digest: String, _ hash: CertificateFacts.SignatureHash) throws {
        let factory = try CertificateFactory()
        try factory.rootCA("root")
        try factory.certificate("leaf", issuer: "root", digest: digest)
        let facts = try #require(try X509Certificate.certificates(pem: try factory.pem("leaf")).first).facts
        #expect(facts.signatureHash == hash)
    }

    @Test("no EKU extension is nil; clientAuth only is not serverAuth")
    func extendedKeyUsage() throws {
        let factory = try CertificateFactory()
        try factory.rootCA("root")
        try factory.certificate("none", issuer: "root", extensions: ["subjectAltName=DNS:a.example"])
        try factory.certificate("client", issuer: "root", extensions: ["extendedKeyUsage=clientAuth"])
        #expect(try X509Certificate.certificates(pem: try factory.pem("none"))[0].facts.extendedKeyUsage == nil)
        #expect(
            try X509Certificate.certificates(pem: try factory.pem("client"))[0].facts.extendedKeyUsage == [.clientAuth])
        #expect(try X509Certificate.certificates(pem: try factory.pem("client"))[0].facts.dnsNames == [])
    }

    @Test("the SPKI hash is the one Apple's openssl recipe prints")
    func spkiHash() throws {
        let factory = try CertificateFactory()
        try factory.rootCA("root", key: "ec:P-256")
        let publicKey = try factory.openssl(["x509", "-in", "root.pem", "-pubkey", "-noout"])
        let der = try factory.openssl(["pkey", "-pubin", "-outform", "der"], input: publicKey)
        let digest = try factory.openssl(["dgst", "-sha256", "-binary"], input: der)
        let expected = digest.base64EncodedString()
        let facts = try X509Certificate.certificates(pem: try factory.pem("root"))[0].facts
        #expect(facts.spkiSHA256?.base64 == expected)
    }

    @Test("a chain file gives every certificate in order; DER round-trips")
    func chainAndDER() throws {
        let factory = try CertificateFactory()
        try factory.rootCA("root")
        try factory.certificate("intermediate", issuer: "root", extensions: [], isCA: true)
        try factory.certificate("leaf", issuer: "intermediate")
        let chain = try X509Certificate.certificates(
            pem: try factory.pem("leaf") + factory.pem("intermediate") + factory.pem("root"))
        #expect(chain.map(\.subject) == ["CN=leaf", "CN=intermediate", "CN=root"])
        #expect(chain.map(\.facts.isSelfSigned) == [false, false, true])
        let copy = try X509Certificate(der: chain[0].der)
        #expect(copy.facts == chain[0].facts)
    }

    @Test(
        "garbage is a TLSError, not a crash",
        arguments: [[UInt8](), Array("not a certificate".utf8), [0x30, 0x82, 0xff]])
    func garbage(_ bytes: [UInt8]) {
        #expect(throws: TLSError.self) { try X509Certificate.certificates(pem: bytes) }
        #expect(throws: TLSError.self) { try X509Certificate(der: bytes) }
    }
}
