import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// `atsproxyctl status` in intercept mode: the CA, `--passthrough`, and the hosts passed through
/// after devices rejected the minted certificate; tunnel mode says so in one row.
@Suite("Intercept mode in status", .startsProcesses(timeLimit: .seconds(60)))
struct InterceptStatusProcessTests {
    @Test("status names the CA and --passthrough, and lists a host once devices rejected its certificate 3 times")
    func rejectedHostListed() throws {
        let host = "status.intercept.test"
        let fixture = try InterceptFixture(names: [host])
        try fixture.leaf("leaf", for: [host])
        let nginx = try TestNginx(directory: fixture.directory, certificates: ["leaf"])
        let daemon = try fixture.daemon(["--passthrough", "*.bank.example"])
        let before = atsproxyctl("status", "--socket", daemon.controlSocket)
        #expect(
            before.standardOutput.contains("Inspect:       intercept (abort on block), CA \(fixture.caPEM)"),
            "\(before.standardOutput)")
        #expect(before.standardOutput.contains("passed through: *.bank.example"))
        #expect(!before.standardOutput.contains("rejected the certificate"))
        // A device that trusts only the origin's root rejects the minted leaf.
        for _ in 0..<3 {
            _ = try fixture.curl(
                daemon, ["-o", "/dev/null", "https://\(host):\(nginx.ports[0])/"],
                trust: fixture.factory.path("root.pem"))
        }
        _ = daemon.lines("connection", atLeast: 3)
        let after = atsproxyctl("status", "--socket", daemon.controlSocket)
        #expect(
            after.standardOutput.contains(
                "passed through after a device refused the certificate: \(host) for 127.0.0.1 (3 rejections)"),
            "\(after.standardOutput)")
        let json = jsonObject(atsproxyctl("status", "--socket", daemon.controlSocket, "--json").standardOutput)
        let rejected = jsonValue(json, "inspect", "passed_through_after_rejections") as? [[String: Any]]
        #expect(
            rejected?.first?["host"] as? String == host && rejected?.first?["rejections"] as? Int == 3
                && rejected?.first?["client"] as? String == "127.0.0.1",
            "\(String(describing: json))")
        #expect(jsonValue(json, "inspect", "mode") as? String == "intercept")
        #expect(daemon.terminate() == 0)
    }

    @Test("in tunnel mode status says so, and names no CA")
    func tunnelMode() throws {
        let fixture = try InterceptFixture(names: ["tunnel.intercept.test"])
        let daemon = try fixture.daemon(intercept: false)
        let status = atsproxyctl("status", "--socket", daemon.controlSocket)
        #expect(
            status.standardOutput.contains("Inspect:       tunnel (TLS judged by probes, relayed unread)"),
            "\(status.standardOutput)")
        #expect(daemon.terminate() == 0)
    }
}
