import ATSPolicy
import Foundation
import Glibc
import ProxyCore
import TLSTestSupport
import Testing

/// An upstream that speaks first (an SSH or SMTP banner, or a firehose). Where ATS forbids cleartext
/// to the host, the probe finds it speaks cleartext and enforce mode answers the CONNECT 403: the
/// device gets nothing of the server's. Where the cleartext rule lets it through (or in report
/// mode), what the server says first is judged by that rule at once and relayed, so a device that
/// waits for a greeting gets it; a device that has begun a ClientHello decides instead.
@Suite("Servers that speak first", .startsProcesses(timeLimit: .seconds(60)))
struct SpeaksFirstUpstreamTests {
    @Test(
        "enforce, cleartext forbidden: 403 at the CONNECT with the reason, nothing of the server's",
        arguments: [false, true])
    func blockedAtConnect(firehose: Bool) throws {
        let factory = try compliantChain()
        let upstream = try SpeaksFirstServer(firehose: firehose)
        // The 403 at the CONNECT: verdict mode.
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost) { $0.tunnelStart = .atVerdict }
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

    /// Opens a tunnel to a server that speaks first and, without the device saying a word, reads
    /// what the server sent: the `cleartext` rule judged it at once. Returns the log line.
    static func serverSpeaksFirst(_ proxy: TestProxy, _ upstream: SpeaksFirstServer, firehose: Bool) throws -> LogLine {
        let (client, early) = try #require(openRawTunnelKeepingBytes(proxy, to: upstream.port))
        let expected = firehose ? 200_000 : SpeaksFirstServer.banner.count
        let received = early + readAtLeast(expected - early.count, from: client)
        #expect(received.count >= expected, "\(received.count) bytes")
        if !firehose { #expect(received == SpeaksFirstServer.banner) }
        close(client)
        return try #require(try proxy.waitForLogLines(1).first)
    }

    @Test(
        "enforce, cleartext allowed: what the server says first is judged by the cleartext rule at once and relayed",
        arguments: [false, true])
    func judgedAtOnce(firehose: Bool) throws {
        let factory = try compliantChain()
        let upstream = try SpeaksFirstServer(firehose: firehose)
        let proxy = try TestProxy.start(factory, policyXML: insecureLocalhost)
        defer { proxy.stop() }
        let line = try Self.serverSpeaksFirst(proxy, upstream, firehose: firehose)
        #expect(line.action == "allowed", "\(line)")
        #expect(line.compliant == true, "\(line)")
        #expect(line.fields["tunnel"] as? String == "cleartext", "\(line)")
    }

    @Test("report, cleartext forbidden: the tunnel opens, the banner is relayed, and the line is non-compliant")
    func reportMode() throws {
        let factory = try compliantChain()
        let upstream = try SpeaksFirstServer(firehose: false)
        let proxy = try TestProxy.start(factory, policyXML: fullATSForLocalhost, mode: .report)
        defer { proxy.stop() }
        let line = try Self.serverSpeaksFirst(proxy, upstream, firehose: false)
        #expect(line.action == "allowed", "\(line)")
        #expect(line.compliant == false, "\(line)")
        #expect(line.violations == ["cleartext"], "\(line)")
    }

    @Test(
        "a device that has begun a ClientHello decides: the banner waits, and TLS to a server that speaks none is cut off"
    )
    func deviceBeganTLS() throws {
        let factory = try compliantChain()
        let upstream = try SpeaksFirstServer(firehose: false, delay: 0.5)
        let proxy = try TestProxy.start(factory, policyXML: insecureLocalhost)
        defer { proxy.stop() }
        let client = try #require(openRawTunnel(proxy, to: upstream.port))
        defer { close(client) }
        let hello = TestClientHello(serverName: "localhost").records()
        // The first bytes of a TLS record: not yet judged, so the banner that comes meanwhile waits.
        sendAll(client, hello.prefix(3))
        #expect(
            receiveAvailable(client, wait: 1) == nil, "the server's bytes reached the device before its own were judged"
        )
        sendAll(client, hello.dropFirst(3))
        let answer = readUntilClosed(client)
        #expect(answer.closed && answer.bytes.isEmpty, "\(answer.bytes.count) bytes")
        let line = try #require(try proxy.waitForLogLines(1).first)
        #expect(line.fields["tunnel"] as? String == "tls", "\(line)")
        #expect(line.upstreamError?.contains("the server does not speak TLS") == true, "\(line)")
    }
}
