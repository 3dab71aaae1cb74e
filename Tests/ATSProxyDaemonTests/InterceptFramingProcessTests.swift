import Foundation
import TLSTestSupport
import Testing

/// Issue 27, item 1, in intercept mode end to end: curl through the daemon to an HTTPS origin that
/// writes more than its response in one write (`TestHTTPOrigin`'s `/surplus`).
@Suite("Intercept mode: bytes beyond a response", .startsProcesses(timeLimit: .seconds(60)))
struct InterceptFramingProcessTests {
    @Test("the origin's surplus never answers the next request: the device's connection ends after the response")
    func surplus() throws {
        let host = "surplus.intercept.test"
        let fixture = try InterceptFixture(names: [host])
        try fixture.leaf("leaf", for: [host])
        let origin = try TestHTTPOrigin(
            directory: fixture.directory, certificate: fixture.factory.path("leaf.pem"),
            key: fixture.factory.path("leaf.key"))
        let daemon = try fixture.daemon()
        let base = "https://\(host):\(origin.port)"
        let result = try fixture.curl(daemon, ["-D", "-", "\(base)/surplus", "\(base)/after"])
        let output = result.standardOutput
        #expect(output.contains("hello"), "\(output) \(result.standardError)")
        #expect(output.contains("hello from the origin, /after"), "\(output)")
        #expect(!output.contains("X-Smuggled") && !output.contains("SPLIT!"), "\(output)")
        let requests = daemon.lines("request", atLeast: 2)
        #expect(requests.count == 2, "\(requests)")
        let error = requests.first?["upstream_error"] as? String
        #expect(error?.hasPrefix("the origin sent 61 bytes beyond the end of its response") == true, "\(requests)")
        #expect(requests.last?["status"] as? Int == 200)
        let connections = daemon.lines("connection", atLeast: 2)
        #expect(connections.count == 2, "curl opened a second connection: \(connections)")
        #expect(connections.contains { $0["failure"] as? String == "response_surplus" }, "\(connections)")
        #expect(daemon.terminate() == 0)
    }
}
