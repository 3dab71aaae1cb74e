import Foundation
import ProxyCore
import TLSTestSupport
import Testing

/// A loop stopped while a session is open (a test's proxy, or a daemon stopped without a drain):
/// the session closes while its base is alive and logs its line. Before, its connections, which
/// retain themselves until closed, outlived the loop and kept the base alive (LeakSanitizer's
/// report of `event_base_priority_init`), and the line was never written.
@Suite("A loop stopped with sessions open", .startsProcesses(timeLimit: .seconds(60)))
struct LoopStopTests {
    @Test("a CONNECT still awaiting its verdict is closed and logged as shut down when its loop stops")
    func openTunnelClosedAtStop() throws {
        let factory = try loopbackChain()
        // A server that never accepts: the kernel completes the probe's connect, and its hello waits.
        let silent = try #require(bindLoopback(listening: 8))
        defer { close(silent.descriptor) }
        let proxy = try TestProxy.start(factory, policyXML: "")
        let client = try #require(connectLoopback(port: proxy.port))
        defer { close(client) }
        let connect = "CONNECT 127.0.0.1:\(silent.port) HTTP/1.1\r\nHost: 127.0.0.1:\(silent.port)\r\n\r\n"
        #expect(sendAll(client, Array(connect.utf8)))
        // The probe's connection is waiting in the silent server's queue: the tunnel awaits its verdict.
        var pending = pollfd(fd: silent.descriptor, events: Int16(POLLIN), revents: 0)
        #expect(poll(&pending, 1, 30_000) == 1, "the probe never connected")
        proxy.stop()
        let lines = try proxy.waitForLogLines(1, timeout: .seconds(1))
        let line = try #require(lines.first, "no line for the tunnel open at stop")
        #expect(line.method == "CONNECT")
        #expect(line.fields["failure"] as? String == "shutdown", "\(line)")
        // Its connection was closed too: the client reads the end.
        #expect(awaitPeerClose(client, wait: 10))
    }
}
