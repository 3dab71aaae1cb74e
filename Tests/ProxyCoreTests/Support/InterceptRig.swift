import ATSPolicy
import COpenSSL
import EventLoop
import Foundation
import TLSInspection
import TLSTestSupport
import Testing

@testable import ProxyCore

/// An intercept-mode session on scripted streams: a CA for the proxy's leaves, an origin
/// certificate for `api.example.com` from a root the proxy trusts, and the session's CONNECT
/// answered up to its 200. The device and the origin are real OpenSSL endpoints
/// (``MemoryTLSPeer``) that the test creates for each scenario; ``settle()`` moves bytes between
/// them and the session until nothing moves.
final class InterceptRig {
    static let host = "api.example.com"
    static let connect = "CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n"
    static let upstreamAddress = try! SocketAddress(parsing: "203.0.113.7:443")

    let certificates: CertificateFactory
    let authority: CertificateAuthority
    let environment: ScriptedEnvironment
    /// The peers in play, each moved by ``settle()``.
    private var peers: [MemoryTLSPeer] = []

    /// - Parameters:
    ///   - originVersions: the versions the origin server speaks (TLS 1.0 only: one ATS refuses).
    init(policyXML: String = "", mode: EnforcementMode = .enforce) throws {
        certificates = try CertificateFactory()
        // EC keys: made in milliseconds where RSA's take the openssl tool a second or more.
        try certificates.rootCA("origin-root", key: "ec:P-256")
        try certificates.certificate(
            "origin", issuer: "origin-root", key: "ec:P-256",
            extensions: ["subjectAltName=DNS:\(Self.host)", "extendedKeyUsage=serverAuth"])
        authority = try CertificateAuthority.create(in: certificates.path("proxy-ca"))
        environment = try ScriptedEnvironment(policyXML: policyXML, mode: mode)
        try environment.intercept(
            authority: authority, trusting: X509Certificate.certificates(encoded: certificates.pem("origin-root")))
    }

    /// A session whose CONNECT was dialed (by name: intercept mode judges its own handshake, not a
    /// probe's) and answered with its 200; `upstream` is the connection the dial gave it.
    func connected(from address: String = "127.0.0.1") throws -> (client: ScriptedStream, upstream: ScriptedStream) {
        let client = ScriptedStream("client", playbook: environment.playbook)
        _ = environment.startSession(client: client, address: address)
        client.peerSends(Self.connect)
        environment.playbook.run()
        let dial = try #require(environment.dials.last)
        #expect(dial.host == Self.host && dial.address == nil, "intercept mode dials by name, no probe first")
        let upstream = ScriptedStream("upstream", playbook: environment.playbook)
        dial.connect(upstream, address: Self.upstreamAddress)
        environment.playbook.run()
        #expect(client.deliveredText == "HTTP/1.1 200 Connection established\r\n\r\n")
        return (client, upstream)
    }

    /// A device on `client`: it trusts the proxy's CA unless told otherwise, and speaks `versions`.
    func device(
        on client: ScriptedStream, trusting: String? = nil,
        versions: ClosedRange<Int32> = TLS1_2_VERSION...TLS1_3_VERSION, ciphers: String? = nil, alpn: [String] = []
    ) throws -> MemoryTLSPeer {
        let peer = try MemoryTLSPeer(
            .client(serverName: Self.host, trusting: trusting ?? authority.certificatePath), over: client,
            versions: versions, ciphers: ciphers, alpn: alpn)
        peers.append(peer)
        return peer
    }

    /// The origin server on `upstream`, with the certificate the proxy's handshake trusts (or
    /// another of ``certificates``, by name), speaking `alpn` (by default HTTP/1.1, as a server that
    /// does not speak HTTP/2 answers an offer of both).
    func origin(
        on upstream: ScriptedStream, versions: ClosedRange<Int32> = TLS1_2_VERSION...TLS1_3_VERSION,
        certificate: String = "origin", alpn: [String] = ["http/1.1"]
    ) throws -> MemoryTLSPeer {
        let peer = try MemoryTLSPeer(
            .server(certificate: certificates.path("\(certificate).pem"), key: certificates.path("\(certificate).key")),
            over: upstream, versions: versions,
            ciphers: versions.lowerBound < TLS1_2_VERSION ? "DEFAULT:@SECLEVEL=0" : nil, alpn: alpn)
        peers.append(peer)
        return peer
    }

    /// Runs the loop and moves every peer's bytes until nothing moves.
    func settle() {
        var rounds = 0
        repeat {
            environment.playbook.run()
            rounds += 1
            precondition(rounds < 1000, "the scripted peers do not settle")
        } while peers.map({ $0.exchange() }).contains(true)
    }

    /// An intercepted tunnel with both handshakes done: the device (offering `alpn`) and the
    /// origin (presenting `originCertificate`), ready for requests.
    func intercepted(
        from address: String = "127.0.0.1", alpn: [String] = [], originCertificate: String = "origin",
        originALPN: [String] = ["http/1.1"]
    ) throws -> (client: ScriptedStream, upstream: ScriptedStream, device: MemoryTLSPeer, origin: MemoryTLSPeer) {
        let (client, upstream) = try connected(from: address)
        let device = try device(on: client, alpn: alpn)
        let origin = try origin(on: upstream, certificate: originCertificate, alpn: originALPN)
        settle()
        try #require(device.handshake == .complete, "the device's handshake: \(device.handshake)")
        try #require(origin.handshake == .complete, "the origin's handshake: \(origin.handshake)")
        return (client, upstream, device, origin)
    }

    /// The one record logged, once the session has ended.
    var record: ConnectionRecord? { environment.records.count == 1 ? environment.records[0] : nil }
}
