import Foundation
import TLSTestSupport
import Testing

/// `--block-style page` when the verdict comes from the probes because the server refused the
/// proxy's own handshake outright (TLS 1.0 only, the most common ATS failure): the device still
/// gets its handshake, with a minted leaf, and the 403 page, not an alert; nothing goes upstream.
@Suite(
    "Intercept mode: the block page for a server that refuses the proxy's handshake",
    .startsProcesses(timeLimit: .seconds(60)))
struct InterceptPageProcessTests {
    @Test(
        "a TLS 1.0-only server with --block-style page: 403 naming tls_version inside the device's TLS, one request line"
    )
    func pageForRefusedHandshake() throws {
        let host = "legacy-page.intercept.test"
        let fixture = try InterceptFixture(names: [host])
        let arguments = try NonCompliantServer.tls10Only.serverArguments(fixture.factory, hostName: host)
        let server = try TestTLSServer(directory: fixture.directory, arguments)
        let daemon = try fixture.daemon(["--block-style", "page"])
        let curl = try fixture.curl(daemon, ["-D", "-", "-H", "Accept: text/html", "https://\(host):\(server.port)/"])
        #expect(curl.status == 0, "\(curl.standardError)")
        #expect(curl.standardOutput.contains("HTTP/1.1 403 Forbidden"), "\(curl.standardOutput)")
        #expect(curl.standardOutput.contains("X-ATS-Violations: tls_version"), "\(curl.standardOutput)")
        #expect(curl.standardOutput.contains("<h1>Blocked by App Transport Security</h1>"))
        let line = try #require(daemon.lines("connection", atLeast: 1).first)
        #expect(line["inspect"] as? String == "intercept" && line.action == "blocked", "\(line)")
        #expect(line.violationNames == ["tls_version"], "\(line)")
        let request = try #require(daemon.lines("request", atLeast: 1).first)
        #expect(request["status"] as? Int == 403 && request["upstream"] is NSNull, "\(request)")
        #expect(daemon.terminate() == 0)
    }
}
