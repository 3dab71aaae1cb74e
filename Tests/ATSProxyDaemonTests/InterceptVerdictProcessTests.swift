import Foundation
import TLSTestSupport
import Testing

/// Intercept mode judges its own upstream handshake; tunnel mode judges a probe's. For every server
/// kind the tunnel tests use, the same CONNECT through a daemon of each mode must end with the same
/// verdict: `compliant`, `action` and the violations' names on the connection line.
@Suite("Intercept mode: the same verdicts as tunnel mode", .startsProcesses(timeLimit: .seconds(60)))
struct InterceptVerdictProcessTests {
    enum Kind: Sendable, CustomStringConvertible {
        case compliant(CompliantServer)
        case nonCompliant(NonCompliantServer)
        /// RSA key exchange under a policy with NSExceptionRequiresForwardSecrecy false: allowed.
        case rsaKeyExchangeExcepted

        var description: String {
            switch self {
            case .compliant(let kind): "compliant: \(kind)"
            case .nonCompliant(let kind): "non-compliant: \(kind)"
            case .rsaKeyExchangeExcepted: "RSA key exchange with NSExceptionRequiresForwardSecrecy false"
            }
        }

        /// The verdict both modes must log: the action and the violations' names.
        var expected: (action: String, violations: [String]) {
            switch self {
            case .compliant, .rsaKeyExchangeExcepted: ("allowed", [])
            case .nonCompliant(let kind): ("blocked", [kind.violation])
            }
        }
    }

    static let kinds: [Kind] =
        [.compliant(.tls13Only), .compliant(.tls12ForwardSecret), .rsaKeyExchangeExcepted]
        + ([
            .tls10Only, .tls11Only, .rsaKeyExchangeOnly, .rsa1024Leaf, .sha1Leaf, .expired, .unknownRoot,
            .otherHostName,
            .selfSignedLeaf,
        ] as [NonCompliantServer]).map(Kind.nonCompliant)

    @Test("the connection line's compliant, action and violations match tunnel mode's", arguments: kinds)
    func sameVerdict(_ kind: Kind) throws {
        let host = "kind.verdict.test"
        let fixture = try InterceptFixture(names: [host])
        let arguments: [String]
        switch kind {
        case .compliant(let server): arguments = try server.serverArguments(fixture.factory, hostName: host)
        case .nonCompliant(let server): arguments = try server.serverArguments(fixture.factory, hostName: host)
        case .rsaKeyExchangeExcepted:
            arguments = try NonCompliantServer.rsaKeyExchangeOnly.serverArguments(fixture.factory, hostName: host)
            try fixture.policy.write(
                ats: "<key>NSExceptionDomains</key><dict><key>\(host)</key><dict>"
                    + "<key>NSExceptionRequiresForwardSecrecy</key><false/></dict></dict>")
        }
        let server = try TestTLSServer(directory: fixture.directory, arguments)
        // curl trusts both roots and speaks anything: the proxy's verdict is under test, not curl's.
        let bundle = fixture.factory.path("bundle.pem")
        try
            (String(contentsOfFile: fixture.factory.path("root.pem"), encoding: .utf8)
            + String(contentsOfFile: fixture.caPEM, encoding: .utf8)).write(
                toFile: bundle, atomically: true, encoding: .utf8)
        let url = "https://\(host):\(server.port)/"
        var verdicts: [String: [String: Any]] = [:]
        for intercept in [false, true] {
            let daemon = try fixture.daemon(intercept: intercept)
            _ = try fixture.curl(
                daemon, ["-o", "/dev/null", "--tlsv1.0", "--ciphers", "DEFAULT:@SECLEVEL=0", url], trust: bundle)
            let line = try #require(
                daemon.lines("connection", atLeast: 1).first,
                "no connection line in \(intercept ? "intercept" : "tunnel") mode")
            verdicts[intercept ? "intercept" : "tunnel"] = line
            #expect(daemon.terminate() == 0)
        }
        let tunnel = try #require(verdicts["tunnel"])
        let intercepted = try #require(verdicts["intercept"])
        #expect(intercepted.compliant == tunnel.compliant, "tunnel: \(tunnel)\nintercept: \(intercepted)")
        #expect(intercepted.action == tunnel.action, "tunnel: \(tunnel)\nintercept: \(intercepted)")
        #expect(intercepted.violationNames == tunnel.violationNames, "tunnel: \(tunnel)\nintercept: \(intercepted)")
        // And both right, so that the two cannot agree on a wrong verdict.
        #expect(tunnel.action == kind.expected.action, "\(tunnel)")
        #expect(Set(kind.expected.violations).isSubset(of: tunnel.violationNames), "\(tunnel)")
        #expect(tunnel.compliant == kind.expected.violations.isEmpty, "\(tunnel)")
        withExtendedLifetime(server) {}
    }
}
