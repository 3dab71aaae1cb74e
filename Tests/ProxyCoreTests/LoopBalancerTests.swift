import EventLoop
import Foundation
import Glibc
import ProxyCore
import TLSTestSupport
import Testing

/// Two proxy loops as the daemon runs them: the first listens and keeps clients while it serves
/// fewer than `keepBelow`, then hands each new one to the loop serving the fewest.
@Suite("Loop balancer: one listening loop, clients spread when it is busy", .startsProcesses(timeLimit: .seconds(60)))
struct LoopBalancerTests {
    /// Opens a tunnel to `port` through the proxy and waits for its `200`; the caller closes it.
    private func openTunnel(proxy: TestProxy, to port: UInt16) throws -> Int32 {
        let descriptor = try #require(connectLoopback(port: proxy.port))
        let request = Array("CONNECT localhost:\(port) HTTP/1.1\r\nHost: localhost:\(port)\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        let answer = receiveAvailable(descriptor, wait: 10) ?? []
        #expect(
            String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 200"),
            "\(String(decoding: answer, as: UTF8.self))")
        return descriptor
    }

    /// The loops' open connection counts once they are `expected`, or as they are after 10 s: a
    /// session leaves its loop's count only after writing its log line, and a client's connection
    /// counts from just before its answer, so one read at either moment races the loop.
    private func openConnections(_ proxy: TestProxy, becoming expected: [Int]) -> [Int] {
        var counts: [Int] = []
        _ = eventually(timeout: 10, interval: 0.01) {
            counts = proxy.loads.map(\.openConnections)
            return counts == expected
        }
        return counts
    }

    @Test("below keepBelow the listening loop serves every client itself")
    func lightLoadStaysOnOneLoop() throws {
        let factory = try compliantChain()
        let server = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost, loops: 2, keepBelow: 4)
        defer { proxy.stop() }
        for _ in 0..<3 {
            let result = try proxy.curlHTTPS(factory, port: server.port)
            #expect(result.status == 0, "\(result.standardError)")
        }
        #expect(try proxy.waitForLogLines(3).count == 3)
        #expect(proxy.loads.map(\.servedConnections) == [3, 0])
        #expect(openConnections(proxy, becoming: [0, 0]) == [0, 0])
    }

    @Test("a busy listening loop hands the next client to the idle loop, which serves it end to end")
    func busyLoopHandsOver() throws {
        let factory = try compliantChain()
        let server = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        // s_server serves one connection at a time: the held tunnel gets a server of its own.
        let heldServer = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost, loops: 2, keepBelow: 1)
        defer { proxy.stop() }
        let held = try openTunnel(proxy: proxy, to: heldServer.port)
        #expect(openConnections(proxy, becoming: [1, 0]) == [1, 0])
        let result = try proxy.curlHTTPS(factory, port: server.port)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.contains("s_server"))
        let line = try #require(try proxy.waitForLogLines(1).first?.fields)
        #expect(line["action"] as? String == "allowed")
        #expect(line["port"] as? Int == Int(server.port))
        #expect(proxy.loads.map(\.servedConnections) == [1, 1])
        // curl's connection has left the second loop; the held tunnel is still on the first.
        #expect(openConnections(proxy, becoming: [1, 0]) == [1, 0])
        close(held)
    }

    @Test("above keepBelow each new client goes to the loop serving the fewest, the listening one on a tie")
    func heavyLoadSpreadsEvenly() throws {
        let factory = try compliantChain()
        let server = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost, loops: 2, keepBelow: 2)
        defer { proxy.stop() }
        var held: [Int32] = []
        defer { for descriptor in held { close(descriptor) } }
        // Kept, kept, handed (2 vs 0), handed (2 vs 1), kept on the tie (2 vs 2), handed (3 vs 2).
        let expected = [[1, 0], [2, 0], [2, 1], [2, 2], [3, 2], [3, 3]]
        for counts in expected {
            held.append(try openTunnel(proxy: proxy, to: server.port))
            #expect(openConnections(proxy, becoming: counts) == counts)
        }
    }
}
