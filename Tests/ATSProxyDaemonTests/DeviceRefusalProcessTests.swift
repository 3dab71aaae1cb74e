import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// Intercept mode counts only a device refusing the minted certificate towards passing a host
/// through, and only for that device: an old client, or one whose suites the device side does not
/// take, is logged as what it is and changes nothing for anyone.
@Suite("Intercept mode: device refusals counted right", .startsProcesses(timeLimit: .seconds(90)))
struct DeviceRefusalProcessTests {
    static let host = "refusal.intercept.test"

    static func origin() throws -> (InterceptFixture, TestTLSServer) {
        let fixture = try InterceptFixture(names: [host])
        try fixture.leaf("leaf", for: [host])
        return (fixture, try TestTLSServer(directory: fixture.directory, ["-cert", "leaf.pem", "-key", "leaf.key"]))
    }

    /// curl through the daemon from `source` (a loopback address), trusting `trust`.
    static func curl(
        _ fixture: InterceptFixture, _ daemon: DaemonProcess, port: UInt16, from source: String, trust: String
    ) throws -> CommandResult {
        try fixture.curl(
            daemon, ["--interface", source, "-o", "/dev/null", "-w", "%{http_code}", "https://\(host):\(port)/"],
            trust: trust)
    }

    @Test(
        "TLS 1.0 only, and TLS 1.2 with CBC suites only: client_tls_version and client_no_shared_cipher, never counted as refusals"
    )
    func mismatchesAreNotRefusals() throws {
        let (fixture, server) = try Self.origin()
        let daemon = try fixture.daemon()
        let attempts: [(options: [String], failure: String)] = [
            (["-tls1", "-cipher", "DEFAULT:@SECLEVEL=0"], "client_tls_version"),
            (
                ["-tls1_2", "-cipher", "ECDHE-RSA-AES128-SHA:ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA384"],
                "client_no_shared_cipher"
            ),
        ]
        // Four of each: past the three refusals that would pass the host through.
        for (options, _) in attempts {
            for _ in 1...4 {
                let output = try fixture.sClient(
                    daemon, host: Self.host, port: server.port, serverName: Self.host, options)
                #expect(!output.standardOutput.contains("BEGIN CERTIFICATE"), "a handshake completed: \(output)")
            }
        }
        let lines = daemon.lines("connection", atLeast: 8)
        try #require(lines.count == 8, "\(lines)")
        for (index, line) in lines.enumerated() {
            let expected = attempts[index / 4].failure
            #expect(line["failure"] as? String == expected, "\(line)")
            #expect(line["intercept_failed"] as? String == expected, "\(line)")
            #expect((line["upstream_error"] as? String)?.contains("rejected the proxy's certificate") == false)
        }
        // The same device, with the CA, is intercepted: nothing was counted against the host.
        let trusted = try Self.curl(fixture, daemon, port: server.port, from: "127.0.0.1", trust: fixture.caPEM)
        #expect(trusted.standardOutput == "200", "\(trusted.standardError)")
        let last = try #require(daemon.lines("connection", atLeast: 9).last)
        #expect(last["inspect"] as? String == "intercept", "\(last)")
        #expect(try #require(daemonStatus(daemon.controlSocket)).isEmptyPassthrough)
        #expect(daemon.terminate() == 0)
    }

    @Test(
        "one device's three refusals pass the host through for it alone; status, passthrough list and /metrics show the pair; passthrough clear intercepts it again"
    )
    func refusalsPerDevice() throws {
        let (fixture, server) = try Self.origin()
        let daemon = try fixture.daemon()
        let root = fixture.factory.path("root.pem")
        // 127.0.0.1 has no atsproxy CA: three refusals (unknown_ca).
        for _ in 1...3 {
            let refused = try Self.curl(fixture, daemon, port: server.port, from: "127.0.0.1", trust: root)
            #expect(refused.status == 60, "\(refused.standardError)")
        }
        let refusals = daemon.lines("connection", atLeast: 3)
        #expect(refusals.allSatisfy { $0["failure"] as? String == "client_rejected_certificate" }, "\(refusals)")
        #expect(
            (refusals.last?["upstream_error"] as? String)?.contains("passed through for 127.0.0.1 from now on") == true,
            "\(refusals)")
        // Passed through for 127.0.0.1: it sees the origin's certificate, which the test root signed.
        let passed = try Self.curl(fixture, daemon, port: server.port, from: "127.0.0.1", trust: root)
        #expect(passed.standardOutput == "200", "\(passed.standardError)")
        let passedLine = try #require(daemon.lines("connection", atLeast: 4).last)
        #expect(passedLine["passthrough"] as? String == "client_rejected_before", "\(passedLine)")
        // Another device, which trusts the atsproxy CA, is still intercepted.
        let other = try Self.curl(fixture, daemon, port: server.port, from: "127.0.0.2", trust: fixture.caPEM)
        #expect(other.standardOutput == "200", "\(other.standardError)")
        let otherLine = try #require(daemon.lines("connection", atLeast: 5).last)
        #expect(otherLine["inspect"] as? String == "intercept", "\(otherLine)")

        let pairs = jsonValue(daemonStatus(daemon.controlSocket), "inspect", "passed_through_after_rejections")
        let pair = try #require((pairs as? [[String: Any]])?.first, "\(String(describing: pairs))")
        #expect(pair["host"] as? String == Self.host && pair["client"] as? String == "127.0.0.1")
        #expect(pair["rejections"] as? Int == 3)
        let list = atsproxyctl("passthrough", "list", "--socket", daemon.controlSocket)
        #expect(list.exitCode == 0)
        #expect(list.standardOutput.contains("\(Self.host) for 127.0.0.1: 3 refusals"), "\(list.standardOutput)")
        let metrics = try PrometheusScrape(socket: daemon.controlSocket)
        #expect(metrics.value("atsproxy_intercept_passed_through") == 1)
        #expect(
            metrics.value("atsproxy_connection_failures_total", ["failure": "client_rejected_certificate"]) == 3)

        let clear = atsproxyctl("passthrough", "clear", "--socket", daemon.controlSocket)
        #expect(clear.exitCode == 0 && clear.standardOutput.contains("Cleared 1 passed-through host"), "\(clear)")
        let again = try Self.curl(fixture, daemon, port: server.port, from: "127.0.0.1", trust: fixture.caPEM)
        #expect(again.standardOutput == "200", "\(again.standardError)")
        let againLine = try #require(daemon.lines("connection", atLeast: 6).last)
        #expect(againLine["inspect"] as? String == "intercept", "\(againLine)")
        #expect(daemon.terminate() == 0)
    }
}

extension Dictionary where Key == String, Value == Any {
    /// A `status` answer with no host passed through after refusals.
    fileprivate var isEmptyPassthrough: Bool {
        (jsonValue(self, "inspect", "passed_through_after_rejections") as? [Any])?.isEmpty == true
    }
}
