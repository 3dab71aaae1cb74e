import ATSPolicy
import Foundation
import ProxyCore
import TLSInspection
import TLSTestSupport
import Testing

/// The probe engine's handshakes against real `openssl s_server` instances on 127.0.0.1, judged by
/// the policy.
@Suite("Probe handshakes against real servers", .startsProcesses(timeLimit: .seconds(60)))
struct ProbeHandshakeTests {
    /// A CA, and a leaf for `localhost` signed by it, in a scratch directory.
    static func makeChain(
        leafKey: String = "rsa:2048", digest: String = "sha256", extensions: [String]? = nil
    ) throws -> CertificateFactory {
        let factory = try CertificateFactory()
        try factory.rootCA("root")
        try factory.certificate(
            "leaf", issuer: "root", key: leafKey, digest: digest,
            extensions: extensions ?? ["subjectAltName=DNS:localhost,IP:127.0.0.1", "extendedKeyUsage=serverAuth"])
        return factory
    }

    static func anchors(_ factory: CertificateFactory) throws -> TrustAnchors {
        try TrustAnchors.loading(caFiles: [factory.path("root.pem")], systemRoots: false)
    }

    static func policy(_ inner: String = "") throws -> TransportSecurityPolicy {
        try PolicyLoader.load(
            bytes: Array("<plist version=\"1.0\"><dict>\(inner)</dict></plist>".utf8), file: "t.plist")
    }

    /// A probe loop on this thread, its paths built against `anchors` and never completed by
    /// fetching (these servers send what they have).
    static func loop(_ anchors: TrustAnchors, timeout: Duration = .seconds(10)) throws -> ProbeLoop {
        try ProbeLoop(
            service: ProbeService(anchors: anchors),
            limits: ProbeLimits(connectTimeout: timeout, handshakeTimeout: timeout, fetchesIntermediates: false))
    }

    /// The ATS-shaped handshake for `localhost`, then the permissive one when it fails, as the proxy does.
    static func judge(
        _ server: TestTLSServer, _ factory: CertificateFactory, policy: TransportSecurityPolicy
    ) throws -> (ats: ProbeOutcome, permissive: ProbeOutcome?, verdict: Verdict) {
        let requirements = try policy.requirements(forHost: "localhost")
        let probes = try loop(try anchors(factory))
        let ats = probes.handshake(
            host: "127.0.0.1", port: server.port, serverName: "localhost", profile: .ats(for: requirements))
        var permissive: ProbeOutcome?
        var observed = ats.observed
        if observed == nil {
            permissive = probes.handshake(
                host: "127.0.0.1", port: server.port, serverName: "localhost", profile: .permissive)
            observed = permissive?.observed
        }
        return (ats, permissive, policy.verdict(for: requirements, observed: observed))
    }

    /// Full ATS for localhost (an exception with no keys: the local-host exemption does not apply).
    static let fullATS = "<key>NSExceptionDomains</key><dict><key>localhost</key><dict/></dict>"

    @Test("a TLS 1.3 server with a good chain passes, and the facts are the server's")
    func compliant() throws {
        let factory = try Self.makeChain()
        let server = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let result = try Self.judge(server, factory, policy: try Self.policy(Self.fullATS))
        let observed = try #require(result.ats.observed, "\(String(describing: result.ats.failure))")
        #expect(observed.tlsVersion == .tls13)
        #expect(observed.trust == .userInstalledRoot)
        #expect(observed.chain.map(\.subject) == ["CN=leaf", "CN=root"])
        #expect(observed.chain.first?.dnsNames == ["localhost"])
        #expect(result.verdict.isCompliant, "\(result.verdict.violations.map(\.explanation))")
    }

    @Test(
        "the key-exchange group the handshake used is recorded, by its IANA name and codepoint",
        arguments: [
            (["-groups", "X25519"], KeyExchangeGroup.x25519, "x25519", 29),
            (["-groups", "P-256"], .secp256r1, "secp256r1", 23),
            (["-groups", "P-384"], .secp384r1, "secp384r1", 24),
            (["-tls1_2", "-groups", "P-521"], .secp521r1, "secp521r1", 25),
        ])
    func keyExchangeGroup(_ options: [String], _ group: KeyExchangeGroup, _ name: String, _ codepoint: UInt16) throws {
        let factory = try Self.makeChain()
        let server = try TestTLSServer(
            directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"] + options)
        let result = try Self.judge(server, factory, policy: try Self.policy(Self.fullATS))
        let observed = try #require(result.ats.observed, "\(String(describing: result.ats.failure))")
        #expect(observed.keyExchangeGroup == group)
        #expect(observed.keyExchangeGroup?.name == name)
        #expect(observed.keyExchangeGroup?.codepoint == codepoint)
    }

    @Test(
        "protocol failures: the ATS handshake fails and the permissive probe says why",
        arguments: [
            (["-tls1", "-cipher", "ECDHE-RSA-AES128-SHA:@SECLEVEL=0"], "tls_version"),
            (["-tls1_2", "-cipher", "AES128-GCM-SHA256"], "cipher_not_fs"),
            (["-tls1_2", "-cipher", "AES256-SHA256"], "cipher_not_ats"),
        ])
    func protocolFailures(_ options: [String], _ violation: String) throws {
        let factory = try Self.makeChain()
        let server = try TestTLSServer(
            directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"] + options)
        let result = try Self.judge(server, factory, policy: try Self.policy(Self.fullATS))
        #expect(result.ats.observed == nil)
        #expect(result.permissive?.observed != nil, "\(String(describing: result.permissive?.failure))")
        #expect(result.verdict.violations.map(\.kind.name) == [violation])
    }

    @Test("a DHE-only server is cipher_not_ats")
    func dheOnly() throws {
        let factory = try Self.makeChain()
        try factory.openssl([
            "genpkey", "-genparam", "-algorithm", "DH", "-pkeyopt", "group:ffdhe2048", "-out", "dh.pem",
        ])
        let server = try TestTLSServer(
            directory: factory.directory,
            [
                "-cert", "leaf.pem", "-key", "leaf.key", "-tls1_2", "-cipher", "DHE-RSA-AES128-GCM-SHA256", "-dhparam",
                "dh.pem",
            ])
        let result = try Self.judge(server, factory, policy: try Self.policy(Self.fullATS))
        #expect(result.verdict.violations.map(\.kind.name) == ["cipher_not_ats"])
        #expect(result.permissive?.observed?.cipherSuite == CipherSuite(id: 0x009E))
    }

    @Test(
        "certificate failures complete the handshake and are named",
        arguments: [
            ("rsa:1024", "sha256", nil, "key_size"),
            ("rsa:2048", "sha1", nil, "sig_hash_leaf"),
            (
                "rsa:2048", "sha256", ["subjectAltName=DNS:other.example", "extendedKeyUsage=serverAuth"],
                "name_mismatch"
            ),
            ("rsa:2048", "sha256", ["extendedKeyUsage=serverAuth"], "name_mismatch"),
            // Under a user-installed root a leaf without the EKU passes (Apple skips the strict check there);
            // clientAuth alone fails the loose check every anchor gets.
            (
                "rsa:2048", "sha256", ["subjectAltName=DNS:localhost", "extendedKeyUsage=clientAuth"],
                "no_serverauth_eku"
            ),
        ] as [(String, String, [String]?, String)])
    func certificateFailures(_ key: String, _ digest: String, _ extensions: [String]?, _ violation: String) throws {
        let factory = try Self.makeChain(leafKey: key, digest: digest, extensions: extensions)
        let server = try TestTLSServer(
            directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key", "-cipher", "ALL:@SECLEVEL=0"])
        let result = try Self.judge(server, factory, policy: try Self.policy(Self.fullATS))
        #expect(result.ats.observed != nil, "\(String(describing: result.ats.failure))")
        #expect(result.verdict.violations.map(\.kind.name) == [violation])
    }

    @Test("an unknown root is untrusted; a user-installed one is trusted")
    func trust() throws {
        let factory = try Self.makeChain()
        let server = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let requirements = try Self.policy(Self.fullATS).requirements(forHost: "localhost")
        let outcome = try Self.loop(TrustAnchors(systemRoots: false)).handshake(
            host: "127.0.0.1", port: server.port, serverName: "localhost", profile: .ats(for: requirements))
        let observed = try #require(outcome.observed)
        guard case .untrusted(let reason) = observed.trust else {
            Issue.record("expected untrusted, got \(observed.trust)")
            return
        }
        #expect(reason.contains("local issuer"))
        #expect(outcome.peerCertificates.map(\.subject) == ["CN=leaf"])
    }

    @Test("nothing listening is a connect failure naming the port")
    func refused() throws {
        let outcome = try Self.loop(TrustAnchors(systemRoots: false), timeout: .seconds(2)).handshake(
            host: "127.0.0.1", port: 1, serverName: nil, profile: .permissive)
        #expect(outcome.observed == nil)
        guard case .connect(_, let port, let reason)? = outcome.failure else {
            Issue.record("expected a connect failure, got \(String(describing: outcome.failure))")
            return
        }
        #expect(port == 1)
        #expect(reason.contains("refused"))
    }

    @Test("a name that does not resolve is a resolve failure")
    func unresolvable() throws {
        let outcome = try Self.loop(TrustAnchors(systemRoots: false), timeout: .seconds(2)).handshake(
            host: "no-such-host.invalid", port: 443, serverName: nil, profile: .permissive)
        guard case .resolve? = outcome.failure else {
            Issue.record("expected a resolve failure, got \(String(describing: outcome.failure))")
            return
        }
    }
}
