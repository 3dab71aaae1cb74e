import Foundation
import ProxyCore
import TLSTestSupport
import Testing

/// The line's `timing` says where a tunnel's time went before bytes flowed: the verdict (the probe,
/// or the cache), the tunnel's own connect, the `200`.
@Suite("A tunnel's timing on its line", .startsProcesses(timeLimit: .seconds(60)))
struct TimingLogTests {
    /// `timing`'s three members, nil where the line has none.
    static func timing(_ line: LogLine) -> (verdict: Int?, connect: Int?, established: Int?)? {
        guard let timing = line.fields["timing"] as? [String: Any] else { return nil }
        return (timing["verdict_ms"] as? Int, timing["connect_ms"] as? Int, timing["established_ms"] as? Int)
    }

    @Test(
        "a first and a cached tunnel: verdict, connect and 200 each timed, in order; a blocked CONNECT has no connect")
    func tunnels() throws {
        let factory = try compliantChain()
        let server = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        // Verdict, then connect, then the 200: verdict mode's order.
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost) { $0.tunnelStart = .atVerdict }
        defer { proxy.stop() }
        for attempt in 1...2 {
            let result = try proxy.curlHTTPS(factory, port: server.port)
            #expect(result.status == 0, "attempt \(attempt): \(result.standardError)")
        }
        let lines = try proxy.waitForLogLines(2)
        try #require(lines.count == 2, "\(lines)")
        for line in lines {
            let timing = try #require(Self.timing(line), "no timing: \(line)")
            let verdict = try #require(timing.verdict, "\(line)")
            let connect = try #require(timing.connect, "\(line)")
            let established = try #require(timing.established, "\(line)")
            #expect(verdict >= 0 && connect >= 0, "\(line)")
            // The tunnel connects after the verdict, and the 200 goes once it has.
            #expect(established >= verdict, "\(line)")
        }
        let blocked = try proxy.curlHTTPS(factory, port: 1)
        #expect(blocked.status != 0)
        let line = try #require(try proxy.waitForLogLines(3).last)
        let timing = try #require(Self.timing(line), "\(line)")
        #expect(timing.verdict != nil && timing.connect == nil && timing.established == nil, "\(line)")
    }
}
