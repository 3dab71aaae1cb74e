import ATSPolicy
import Foundation
import TLSInspection
import TLSTestSupport
import Testing

/// SCTs a server delivers in the TLS handshake (the signed_certificate_timestamp extension) are
/// counted apart from those embedded in the certificate.
@Suite("Delivered SCTs", .startsProcesses(timeLimit: .seconds(60)))
struct DeliveredSCTTests {
    /// One syntactically valid SCT v1: version, log id, timestamp, no extensions, an ECDSA/SHA-256
    /// signature (the policy counts SCTs; the proxy does not verify them against Apple's log list).
    static func sct(logByte: UInt8) -> [UInt8] {
        [0] + [UInt8](repeating: logByte, count: 32) + [0, 0, 1, 0x90, 0, 0, 0, 0] + [0, 0] + [4, 3, 0, 8]
            + [UInt8](repeating: 0x30, count: 8)
    }

    /// An s_server -serverinfo file delivering `count` SCTs in extension 18.
    static func serverInfo(count: Int) -> String {
        let scts = (0..<count).flatMap { index -> [UInt8] in
            let one = sct(logByte: UInt8(index + 1))
            return [UInt8(one.count >> 8), UInt8(one.count & 0xff)] + one
        }
        let list = [UInt8(scts.count >> 8), UInt8(scts.count & 0xff)] + scts
        let extensionBytes = [0x00, 0x12, UInt8(list.count >> 8), UInt8(list.count & 0xff)] + list
        return "-----BEGIN SERVERINFO FOR SCT-----\n"
            + Data(extensionBytes).base64EncodedString(options: .lineLength64Characters)
            + "\n-----END SERVERINFO FOR SCT-----\n"
    }

    /// TLS 1.2: s_server's version-1 serverinfo format is sent in the ServerHello only (in TLS 1.3
    /// SCTs travel in the Certificate message, which s_server cannot be given).
    @Test("a TLS 1.2 server delivering SCTs in the handshake has them counted", arguments: [0, 2, 3])
    func delivered(count: Int) throws {
        let factory = try ProbeHandshakeTests.makeChain()
        var arguments = ["-cert", "leaf.pem", "-key", "leaf.key"]
        if count > 0 {
            try Self.serverInfo(count: count).write(toFile: factory.path("scts.pem"), atomically: true, encoding: .utf8)
            arguments += ["-serverinfo", "scts.pem", "-tls1_2"]
        }
        let server = try TestTLSServer(directory: factory.directory, arguments)
        let result = try ProbeHandshakeTests.judge(
            server, factory, policy: try ProbeHandshakeTests.policy(ProbeHandshakeTests.fullATS))
        let observed = try #require(result.ats.observed, "\(String(describing: result.ats.failure))")
        #expect(observed.deliveredSCTs == count)
        #expect(observed.embeddedSCTs == 0)
    }
}
