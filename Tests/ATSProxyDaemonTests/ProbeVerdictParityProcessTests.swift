import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing
import TextFormats

/// The proxy and `atsproxyctl diagnose URL` judge the same server the same way, where diagnose's old
/// blocking probes did not: one server in front of a sound TLS server that turns away iOS 26's
/// two-segment ClientHello, with a close (no alert) or with a reset. The permissive handshake (a
/// small hello) would get through either way, so whether it is made decides the answer.
///
/// After a refusal both make it, to the same address, and both judge `handshake_failure`. After a
/// reset neither does: the connection was lost, which a second handshake would not explain, so
/// there is no verdict (the proxy answers 502 `connection_lost`, diagnose exits 3 naming the
/// reset). The blocking copy took the reset for a refusal, made the permissive handshake (the
/// backend then saw a hello) and judged the server by it (exit 1, `handshake_failure`).
@Suite("the proxy and diagnose judge a server alike", .startsProcesses(timeLimit: .seconds(120)))
struct ProbeVerdictParityProcessTests {
    static let host = "api.parity.test"

    @Test("iOS 26's hello refused or reset: the proxy's verdict is diagnose's", arguments: [false, true])
    func parity(resets: Bool) throws {
        let factory = try CertificateFactory()
        try factory.rootCA("root")
        try factory.certificate(
            "leaf", issuer: "root", extensions: ["subjectAltName=DNS:\(Self.host)", "extendedKeyUsage=serverAuth"])
        try "127.0.0.1 \(Self.host)\n".write(toFile: factory.path("hosts"), atomically: true, encoding: .utf8)
        let backend = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let server = try OneSegmentHelloServer(backend: backend.port, resets: resets)
        let common = [
            "--system-roots", "off", "--ca-file", factory.path("root.pem"), "--hosts-file", factory.path("hosts"),
            "--os-profile", "ios26",
        ]

        let line = try DaemonProcess.lineForOneRequest(
            // Verdict mode: the backend then counts the probes' hellos only (by default the device's
            // own goes to the server while the probe runs).
            directory: factory.directory,
            ["--listen", "127.0.0.1:0", "--threads", "1", "--tunnel-start", "verdict"] + common,
            url: "https://\(Self.host):\(server.port)/")
        let proxyViolations = line["violations"] as? [String] ?? []
        let handedOnByProxy = server.handedOn

        let diagnosed = ATSProxyCtl.run(
            ["diagnose", "https://\(Self.host):\(server.port)/", "--json", "--no-survey"] + common)
        if resets {
            #expect(line["failure"] as? String == "connection_lost", "the proxy: \(line)")
            #expect(proxyViolations.isEmpty)
            #expect(diagnosed.exitCode == 3, "diagnose: \(diagnosed.standardOutput)")
            #expect(
                diagnosed.standardError.contains("the connection failed during the TLS handshake"),
                "\(diagnosed.standardError)")
            // Neither made the permissive handshake after the reset: no hello reached the backend.
            #expect(server.handedOn == 0)
        } else {
            #expect(proxyViolations == ["handshake_failure"], "the proxy: \(line)")
            let json = try JSONValue(parsing: diagnosed.standardOutput)
            let defaults = json["tests"]?.arrayValue?.first { $0["name"]?.stringValue == "ATS Default Connection" }
            let violations = defaults?["violations"]?.arrayValue?.compactMap(\.stringValue)
            #expect(violations == proxyViolations, "diagnose: \(diagnosed.standardOutput)")
            #expect(diagnosed.exitCode == 1)
            // The proxy's permissive handshake went to the address that refused, and reached the backend.
            #expect(handedOnByProxy == 1)
        }
    }
}
