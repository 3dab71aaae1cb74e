import ATSPolicy
import ProxyCore
import TLSInspection
import TLSTestSupport
import Testing

/// A server that reads the ClientHello from one TCP segment, as some servers and middleboxes do,
/// judged as `diagnose` and the proxy's probes judge it: iOS 26's two-segment hello fails there,
/// and the smaller hello of the iOS before it passes.
@Suite("iOS 26's hello against a server that reads one segment", .startsProcesses(timeLimit: .seconds(60)))
struct OneSegmentHelloTests {
    @Test(
        "the ios26 probe fails with handshake_failure where the ios17 probe passes",
        arguments: [(OSProfile.ios17, [String]()), (.ios26, ["handshake_failure"])])
    func oneSegmentReader(_ os: OSProfile, _ expected: [String]) throws {
        let factory = try ProbeHandshakeTests.makeChain()
        let backend = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let server = try OneSegmentHelloServer(backend: backend.port)
        let policy = try PolicyLoader.load(
            bytes: Array("<plist version=\"1.0\"><dict>\(ProbeHandshakeTests.fullATS)</dict></plist>".utf8),
            file: "t.plist",
            settings: PolicySettings(osProfile: os))
        let requirements = try policy.requirements(forHost: "localhost")
        let probes = try ProbeHandshakeTests.loop(try ProbeHandshakeTests.anchors(factory))
        let result = probes.verdict(
            VerdictKey(host: "127.0.0.1", port: server.port, serverName: "localhost", requirements: requirements))
        // The permissive probe's small hello completes either way: the server itself is sound.
        let observed = try #require(result.observed, "\(String(describing: result.upstreamFailure))")
        let verdict = policy.verdict(
            for: requirements, observed: observed, atsHandshakeFailure: result.atsHandshakeFailure)
        #expect(verdict.violations.map(\.kind.name) == expected)
        if os == .ios26 {
            #expect(server.rejected == 1)
            #expect(server.handedOn == 1)
            // A close with no alert: what Apple's client reports as errSSLClosedNoNotify.
            #expect(verdict.error == AppleError(nsurl: -1200, ssl: -9816))
            let explanation = verdict.violations.first?.explanation ?? ""
            #expect(explanation.contains("the ClientHello was iOS 26's"), "\(explanation)")
        } else {
            #expect(server.rejected == 0)
            #expect(result.atsHandshakeFailure == nil)
            #expect(observed.keyExchangeGroup == .x25519)
        }
    }
}
