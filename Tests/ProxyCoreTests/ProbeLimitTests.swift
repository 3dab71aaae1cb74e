import ATSPolicy
import Foundation
import ProxyCore
import TLSTestSupport
import Testing

/// A CONNECT that finds no free probe slot: the proxy made no handshake, so its line says so with a
/// code of its own, and the device gets a 503 (the proxy is busy), not a "TLS handshake failed".
@Suite("No probe slot free", .startsProcesses(timeLimit: .seconds(60)))
struct ProbeLimitTests {
    @Test("the second CONNECT while the only probe slot is taken: 503, probe_limit, no handshake named")
    func slotTaken() throws {
        let factory = try loopbackChain()
        let first = try #require(bindLoopback(listening: 8))
        defer { close(first.descriptor) }
        let second = try #require(bindLoopback(listening: 8))
        defer { close(second.descriptor) }
        // Loopback counted as public, so the CONNECT waits for its verdict (a local host would be
        // tunnelled before any).
        let policy = try PolicyLoader.load(
            bytes: Array("<plist version=\"1.0\"><dict></dict></plist>".utf8), file: "p.plist",
            settings: loopbackIsPublic)
        let proxy = try TestProxy.start(factory, policyXML: "", maximumProbes: 1) { $0.policy = policy }
        defer { proxy.stop() }
        let waiting = try #require(connectLoopback(port: proxy.port))
        defer { close(waiting) }
        let connect = "CONNECT 127.0.0.1:\(first.port) HTTP/1.1\r\nHost: 127.0.0.1:\(first.port)\r\n\r\n"
        #expect(sendAll(waiting, Array(connect.utf8)))
        // The first probe holds the slot: its connection waits in the silent server's queue.
        var pending = pollfd(fd: first.descriptor, events: Int16(POLLIN), revents: 0)
        #expect(poll(&pending, 1, 30_000) == 1, "the first probe never connected")
        let answer = proxy.rawConnect(host: "127.0.0.1", port: second.port)
        #expect(answer.status == 503, "\(answer)")
        let line = try #require(proxy.waitForLogLines(1).first)
        #expect(line.fields["failure"] as? String == "probe_limit", "\(line)")
        #expect(line.upstreamError?.contains("not probed: 1 TLS handshakes are already under way") == true, "\(line)")
        #expect(line.upstreamError?.contains("handshake failed") == false, "\(line)")
        // Nothing went to the second server.
        var untouched = pollfd(fd: second.descriptor, events: Int16(POLLIN), revents: 0)
        #expect(poll(&untouched, 1, 0) == 0)
    }
}
