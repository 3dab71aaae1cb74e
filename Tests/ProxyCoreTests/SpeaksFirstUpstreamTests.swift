import ATSPolicy
import Foundation
import Glibc
import ProxyCore
import TLSTestSupport
import Testing

/// An upstream that speaks first (an SSH or SMTP banner, or a firehose): the probe finds it speaks
/// cleartext. Where ATS forbids cleartext to the host, enforce mode answers the CONNECT 403 and the
/// device gets nothing of the server's; elsewhere the tunnel opens, but nothing the server sends
/// reaches the device before the device's own first bytes are judged.
@Suite("Servers that speak first", .startsProcesses(timeLimit: .seconds(60)))
struct SpeaksFirstUpstreamTests {
    @Test("enforce, cleartext forbidden: 403 at the CONNECT with the reason, nothing of the server's", arguments: [false, true])
    func blockedAtConnect(firehose: Bool) throws {
        let factory = try compliantChain()
        let upstream = try SpeaksFirstServer(firehose: firehose)
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost)
        defer { proxy.stop() }
        let response = proxy.rawConnect(host: "localhost", port: upstream.port)
        #expect(response.status == 403, "\(response)")
        #expect(response.header("X-ATS-Violations") == "cleartext")
        #expect(response.text.contains("does not speak TLS"), "\(response)")
        #expect(!response.text.contains("SSH-2.0") && !response.text.contains("xxxx"), "\(response)")
        let line = try #require(try proxy.waitForLogLines(1).first)
        #expect(line.action == "blocked", "\(line)")
        #expect(line.violations == ["cleartext"], "\(line)")
        #expect(line.nsurl == -1022, "\(line)")
        #expect(line.bytesDown == 0, "\(line)")
        #expect(line.upstreamError?.contains("does not speak TLS") == true, "\(line)")
    }

    /// Opens a tunnel to a server that speaks first and checks that nothing arrives for a second;
    /// then the device speaks, and the server's bytes follow. Returns the log line.
    static func deviceSpeaksFirst(_ proxy: TestProxy, _ upstream: SpeaksFirstServer, firehose: Bool) throws -> LogLine {
        let client = try #require(openRawTunnel(proxy, to: upstream.port))
        #expect(receiveAvailable(client, wait: 1) == nil, "the server's bytes reached the device before it said anything")
        sendAll(client, Array("SSH-2.0-OpenSSH_9.6 device\r\n".utf8))
        let expected = firehose ? 200_000 : SpeaksFirstServer.banner.count
        let received = readAtLeast(expected, from: client)
        #expect(received.count >= expected, "\(received.count) bytes")
        if !firehose { #expect(received == SpeaksFirstServer.banner) }
        close(client)
        return try #require(try proxy.waitForLogLines(1).first)
    }

    @Test("enforce, cleartext allowed: the server's bytes wait for the device's first bytes to be judged", arguments: [false, true])
    func waitsForTheDevice(firehose: Bool) throws {
        let factory = try compliantChain()
        let upstream = try SpeaksFirstServer(firehose: firehose)
        let proxy = try TestProxy.start(factory, policyXML: insecureLocalhost)
        defer { proxy.stop() }
        let line = try Self.deviceSpeaksFirst(proxy, upstream, firehose: firehose)
        #expect(line.action == "allowed", "\(line)")
        #expect(line.compliant == true, "\(line)")
        #expect(line.fields["tunnel"] as? String == "cleartext", "\(line)")
    }

    @Test("report, cleartext forbidden: the tunnel opens, the bytes wait, and the line is non-compliant")
    func reportMode() throws {
        let factory = try compliantChain()
        let upstream = try SpeaksFirstServer(firehose: false)
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost, mode: .report)
        defer { proxy.stop() }
        let line = try Self.deviceSpeaksFirst(proxy, upstream, firehose: false)
        #expect(line.action == "allowed", "\(line)")
        #expect(line.compliant == false, "\(line)")
        #expect(line.violations == ["cleartext"], "\(line)")
    }

    @Test("a device that waits for the server's greeting is closed at the head timeout, and the log says why")
    func deviceWaitsForGreeting() throws {
        let factory = try compliantChain()
        let upstream = try SpeaksFirstServer(firehose: false)
        let proxy = try TestProxy.start(factory, policyXML: insecureLocalhost) { $0.headTimeout = .seconds(1) }
        defer { proxy.stop() }
        let client = try #require(openRawTunnel(proxy, to: upstream.port))
        defer { close(client) }
        let answer = readUntilClosed(client)
        #expect(answer.closed && answer.bytes.isEmpty, "\(answer.bytes.count) bytes")
        let line = try #require(try proxy.waitForLogLines(1).first)
        #expect(line.upstreamError?.contains("the server speaks first") == true, "\(line)")
    }
}
