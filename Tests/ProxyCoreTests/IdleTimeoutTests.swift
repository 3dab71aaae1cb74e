import ATSPolicy
import Foundation
import POSIX
import ProxyCore
import TLSTestSupport
import Testing

/// The idle timeout means idle: a tunnel or an exchange whose bytes flow one way only lives as long
/// as they flow, however long that is; one where nothing moves either way is closed at the timeout,
/// both sides, with the reason in its log line. And the head deadline counts from a head's first
/// byte, whatever trickles in after it.
///
/// The limits are 1 to 1.5 s so the suite stays fast; each transfer lasts several of them.
@Suite("Idle timeout and head deadline", .startsProcesses(timeLimit: .seconds(60)))
struct IdleTimeoutTests {
    typealias Route = PacedHTTPClient.Route

    static let idle: Duration = .seconds(1)
    /// The long transfers' idle timeout: twice `idle`, so that a busy machine (a sanitizer run, tests
    /// side by side) that holds the paced client back for a second does not pass for idleness; the
    /// transfer still lasts twice as long as it.
    static let transferIdle: Duration = .seconds(2)
    /// Far more than the kernel's loopback buffers hold (the proxy must still be relaying after
    /// the idle timeout, twice over), at a rate that makes it last about four seconds.
    static let size = 16 * 1024 * 1024
    static let bytesPerSecond = 4 * 1024 * 1024
    static let routes: [Route] = [.tlsTunnel, .cleartextTunnel, .forwarded]

    struct Transfer {
        let factory: CertificateFactory
        let origin: TestHTTPOrigin
        let proxy: TestProxy
        let route: Route

        init(_ route: Route) throws {
            self.route = route
            factory = try compliantChain()
            origin =
                route == .tlsTunnel
                ? try TestHTTPOrigin(
                    directory: factory.directory, certificate: factory.path("leaf.pem"), key: factory.path("leaf.key"))
                : try TestHTTPOrigin(directory: factory.directory)
            proxy = try TestProxy.start(factory, policyXML: insecureLocalhost) {
                $0.idleTimeout = IdleTimeoutTests.transferIdle
            }
        }

        /// Runs `transfer` and measures how long it took, in seconds.
        func timed(_ transfer: () throws -> CommandResult) rethrows -> (CommandResult, seconds: Double) {
            let clock = ContinuousClock()
            let start = clock.now
            let result = try transfer()
            let elapsed = clock.now - start
            return (result, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        }

        /// The transfer's one log line: allowed, nothing went wrong, by the expected route.
        func expectCleanLogLine(sourceLocation: Testing.SourceLocation = #_sourceLocation) throws -> LogLine {
            let line = LogLine(fields: try proxy.onlyLogLine(sourceLocation: sourceLocation))
            #expect(line.action == "allowed", "\(line)", sourceLocation: sourceLocation)
            #expect(line.upstreamError == nil, "\(line)", sourceLocation: sourceLocation)
            let tunnel = line.fields["tunnel"] as? String
            switch route {
            case .tlsTunnel: #expect(tunnel == "tls", "\(line)", sourceLocation: sourceLocation)
            case .cleartextTunnel: #expect(tunnel == "cleartext", "\(line)", sourceLocation: sourceLocation)
            case .forwarded:
                #expect(line.method != "CONNECT" && tunnel == nil, "\(line)", sourceLocation: sourceLocation)
            }
            return line
        }
    }

    static func sha256(ofFile path: String) throws -> String {
        let result = try runCommand("/usr/bin/sha256sum", [path])
        return String(result.standardOutput.prefix { $0 != " " })
    }

    @Test("a one-way download lasting twice the idle timeout arrives byte-exact", arguments: routes)
    func longDownload(route: Route) throws {
        let transfer = try Transfer(route)
        defer { transfer.proxy.stop() }
        let body = transfer.factory.path("download-\(route).bin")
        let (result, seconds) = try transfer.timed {
            try PacedHTTPClient.download(
                route: route, proxyPort: transfer.proxy.port, originPort: transfer.origin.port,
                path: "/random?bytes=\(Self.size)&seed=7", bytesPerSecond: Self.bytesPerSecond, to: body,
                caFile: transfer.factory.path("root.pem"), directory: transfer.factory.directory)
        }
        #expect(result.status == 0, "the client: \(result.standardError)")
        let fields = result.standardOutput.split(separator: " ").map(String.init)
        #expect(fields.first == "200" && fields.last == "\(Self.size)\n", "\(result.standardOutput)")
        let received = try Self.sha256(ofFile: body)
        #expect(fields.count == 3 && fields[1] == received, "\(result.standardOutput)")
        // Otherwise the transfer never outlasted the timeout and proves nothing.
        #expect(seconds > 3, "the download took only \(seconds) s")
        let line = try transfer.expectCleanLogLine()
        #expect(line.bytesDown >= Self.size, "\(line)")
    }

    @Test("a one-way upload lasting twice the idle timeout arrives byte-exact", arguments: routes)
    func longUpload(route: Route) throws {
        let transfer = try Transfer(route)
        defer { transfer.proxy.stop() }
        let file = transfer.factory.path("upload-\(route).bin")
        try Data(BytePattern(seed: 11).bytes(at: 0, count: Self.size)).write(to: URL(fileURLWithPath: file))
        let (result, seconds) = try transfer.timed {
            try PacedHTTPClient.upload(
                route: route, proxyPort: transfer.proxy.port, originPort: transfer.origin.port, path: "/digest",
                bytesPerSecond: Self.bytesPerSecond, from: file, caFile: transfer.factory.path("root.pem"),
                directory: transfer.factory.directory)
        }
        #expect(result.status == 0, "the client: \(result.standardError)")
        let sent = try Self.sha256(ofFile: file)
        #expect(result.standardOutput == "200 \(sent) \(Self.size)\n")
        #expect(seconds > 3, "the upload took only \(seconds) s")
        let line = try transfer.expectCleanLogLine()
        #expect((line.fields["bytes_up"] as? Int ?? 0) >= Self.size, "\(line)")
    }

    @Test(
        "curl --limit-rate, which reads what the kernel holds and then sleeps for seconds, downloads 16 MiB byte-exact",
        arguments: routes)
    func curlRateLimitedDownload(route: Route) throws {
        let transfer = try Transfer(route)
        defer { transfer.proxy.stop() }
        let body = transfer.factory.path("curl-\(route).bin")
        let headers = transfer.factory.path("curl-\(route).headers")
        let (scheme, options): (String, [String]) =
            switch route {
            case .tlsTunnel: ("https", ["--cacert", transfer.factory.path("root.pem")])
            case .cleartextTunnel: ("http", ["--proxytunnel"])
            case .forwarded: ("http", [])
            }
        let (curl, seconds) = try transfer.timed {
            try runCommand(
                "/usr/bin/curl",
                [
                    "-sS", "--max-time", "40", "--proxy", "http://127.0.0.1:\(transfer.proxy.port)", "--limit-rate",
                    "2M",
                    "-D", headers, "-o", body,
                ] + options + ["\(scheme)://localhost:\(transfer.origin.port)/random?bytes=\(Self.size)&seed=9"])
        }
        #expect(curl.status == 0, "curl: \(curl.standardError)")
        let promised = try String(contentsOfFile: headers, encoding: .utf8).lowercased()
            .firstMatch(of: /x-content-sha256: ([0-9a-f]{64})/)?.1
        let received = try Self.sha256(ofFile: body)
        #expect(promised.map(String.init) == received)
        #expect(seconds > 3, "the download took only \(seconds) s")
        // Not expectCleanLogLine: after curl has left, a TLS origin may keep its side of the tunnel
        // open, and the tunnel then ends at the idle timeout, as it should. The bytes say it all.
        let line = LogLine(fields: try transfer.proxy.onlyLogLine())
        #expect(line.action == "allowed", "\(line)")
        #expect(line.bytesDown >= Self.size, "\(line)")
    }

    @Test("a reader that stops taking bytes is not idle, but is closed at the stall timeout, and the log line says so")
    func stalledReader() throws {
        let factory = try compliantChain()
        let origin = try TestHTTPOrigin(directory: factory.directory)
        let proxy = try TestProxy.start(factory, policyXML: insecureLocalhost) {
            $0.idleTimeout = Self.idle
            $0.stallTimeout = .seconds(3)
        }
        defer { proxy.stop() }
        let client = try #require(connectLoopback(port: proxy.port))
        defer { close(client) }
        let sent = ContinuousClock.now
        sendAll(
            client,
            Array(
                "GET http://localhost:\(origin.port)/random?bytes=\(Self.size) HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8
            ))
        // The client reads nothing: after a second it is stalled, not idle. The session's line comes
        // when it is closed; its time says it was not closed at the idle timeout (1 s) but at the stall
        // timeout (3 s).
        let line = try #require(try proxy.waitForLogLines(1, timeout: .seconds(30)).first)
        let closed = ContinuousClock.now - sent
        #expect(closed >= .milliseconds(2900), "closed after \(closed), before the stall timeout")
        #expect(closed < .seconds(6), "closed after \(closed)")
        // The response had begun: it was cut off, and the line says so (issue 27).
        #expect(line.fields["failure"] as? String == "response_truncated", "\(line)")
        #expect(
            line.upstreamError?.hasSuffix("closed: bytes waited 3 s for a reader that took none of them") == true,
            "\(line)")
    }

    // MARK: - Silence

    /// An upstream that answers one plain GET with `ok`, then notes when the proxy closes its side.
    /// Anything else (the proxy's TLS probe) gets a 400: it speaks cleartext.
    final class SilentUpstream: Sendable {
        final class Stamp: Sendable {
            let time = Locked<ContinuousClock.Instant?>(nil)
        }

        let server: RawTCPServer
        private let stamp = Stamp()
        var closedAt: ContinuousClock.Instant? { stamp.time.withLock { $0 } }

        init() throws {
            let stamp = self.stamp
            server = try RawTCPServer { descriptor in
                guard let (head, _) = receiveHead(descriptor), head.hasPrefix("GET ") else {
                    sendAll(
                        descriptor,
                        Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
                    return
                }
                sendAll(descriptor, Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8))
                if awaitPeerClose(descriptor, wait: 20) { stamp.time.withLock { $0 = ContinuousClock.now } }
            }
        }

        var port: UInt16 { server.port }
    }

    @Test("a silent tunnel is closed at the idle timeout, both sides, and its log line says why")
    func silentTunnel() throws {
        let factory = try compliantChain()
        let upstream = try SilentUpstream()
        let proxy = try TestProxy.start(factory, policyXML: insecureLocalhost) { $0.idleTimeout = Self.idle }
        defer { proxy.stop() }
        let client = try #require(connectLoopback(port: proxy.port))
        defer { close(client) }
        sendAll(
            client,
            Array("CONNECT localhost:\(upstream.port) HTTP/1.1\r\nHost: localhost:\(upstream.port)\r\n\r\n".utf8))
        let established = try #require(receiveHead(client))
        #expect(established.head.hasPrefix("HTTP/1.1 200"), "\(established.head)")
        sendAll(client, Array("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
        let answer = try #require(receiveHead(client))
        #expect(answer.head.hasPrefix("HTTP/1.1 200"))
        if answer.rest.isEmpty { #expect(receiveAvailable(client, wait: 2) == Array("ok".utf8)) }
        let silentFrom = ContinuousClock.now

        #expect(awaitPeerClose(client, wait: 5), "the proxy kept a silent tunnel open")
        let clientClosed = ContinuousClock.now - silentFrom
        #expect(clientClosed >= .milliseconds(900), "closed after \(clientClosed), before the idle timeout")
        #expect(clientClosed < .seconds(3), "closed after \(clientClosed)")
        let line = try #require(try proxy.waitForLogLines(1).first)
        #expect(line.upstreamError == "closed: idle for 1 s, no byte moved either way", "\(line)")
        #expect(line.fields["tunnel"] as? String == "cleartext", "\(line)")
        #expect(line.action == "allowed", "\(line)")
        // The upstream's side went too, at the same moment.
        _ = eventually(interval: 0.02) { upstream.closedAt != nil }
        let upstreamClosed = try #require(upstream.closedAt, "the upstream side was left open")
        #expect(upstreamClosed - silentFrom >= .milliseconds(900))
    }

    /// A proxy with a 1 s idle timeout in front of the Python origin, and a client that has sent it
    /// `GET http://localhost:PORT/path`.
    final class ForwardedRequest {
        let factory: CertificateFactory
        let origin: TestHTTPOrigin
        let proxy: TestProxy
        let client: Int32
        let sentAt: ContinuousClock.Instant

        init(_ path: String) throws {
            factory = try compliantChain()
            origin = try TestHTTPOrigin(directory: factory.directory)
            proxy = try TestProxy.start(factory, policyXML: insecureLocalhost) {
                $0.idleTimeout = IdleTimeoutTests.idle
            }
            let client = connectLoopback(port: proxy.port)
            if client == nil { proxy.stop() }
            self.client = try #require(client, "cannot connect to the proxy")
            sentAt = ContinuousClock.now
            sendAll(
                self.client,
                Array("GET http://localhost:\(origin.port)\(path) HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
        }

        deinit {
            close(client)
            proxy.stop()
        }

        /// The response head, and its body once `bodyBytes` of it are in (or the proxy stops).
        func response(bodyBytes: Int) throws -> (head: String, body: [UInt8]) {
            let answer = try #require(receiveHead(client, wait: 5), "no answer from the proxy")
            var body = answer.rest
            while body.count < bodyBytes, let more = receiveAvailable(client, wait: 2), !more.isEmpty { body += more }
            return (answer.head, body)
        }

        /// Expects the proxy to close the client between 0.85 and 3 seconds after `start`.
        func expectClosedAtIdleTimeout(
            after start: ContinuousClock.Instant, sourceLocation: Testing.SourceLocation = #_sourceLocation
        ) {
            #expect(awaitPeerClose(client, wait: 5), "the proxy kept the client open", sourceLocation: sourceLocation)
            let closed = ContinuousClock.now - start
            #expect(
                closed >= .milliseconds(850) && closed < .seconds(3), "closed after \(closed)",
                sourceLocation: sourceLocation)
        }
    }

    @Test("an origin that never answers gets the client a 504 at the idle timeout")
    func silentOrigin() throws {
        let request = try ForwardedRequest("/stall?seconds=20")
        let answer = try request.response(bodyBytes: 0)
        let waited = ContinuousClock.now - request.sentAt
        #expect(answer.head.hasPrefix("HTTP/1.1 504 Gateway Timeout"), "\(answer.head)")
        #expect(waited >= .milliseconds(900) && waited < .seconds(3), "answered after \(waited)")
        let line = try #require(try request.proxy.waitForLogLines(1).first)
        #expect(line.action == "failed", "\(line)")
        #expect(line.upstreamError == "the origin did not answer within 1 s", "\(line)")
    }

    @Test("a response that stops mid-body is reset at the idle timeout, and its log line says why")
    func stalledResponseBody() throws {
        let request = try ForwardedRequest("/stall-body?seconds=20")
        let answer = try request.response(bodyBytes: 100)
        #expect(answer.head.hasPrefix("HTTP/1.1 200"), "\(answer.head)")
        #expect(answer.body == Array(repeating: UInt8(ascii: "x"), count: 100))
        let start = ContinuousClock.now
        let (rest, end) = receiveUntilEnd(request.client, wait: 5)
        let closed = ContinuousClock.now - start
        #expect(rest.isEmpty && end == .reset, "a cut-off body ends with a reset (issue 27): \(end)")
        #expect(closed >= .milliseconds(850) && closed < .seconds(3), "reset after \(closed)")
        let line = try #require(try request.proxy.waitForLogLines(1).first)
        #expect(
            line.upstreamError
                == "the response was cut off after 100 body bytes of 1000 (its Content-Length): closed: idle for 1 s, no byte moved either way",
            "\(line)")
        #expect(line.fields["failure"] as? String == "response_truncated", "\(line)")
        #expect(line.fields["status"] as? Int == 200, "\(line)")
    }

    @Test("a keep-alive client between requests is closed at the idle timeout, not before, and not logged again")
    func idleKeepAliveClient() throws {
        let request = try ForwardedRequest("/hello")
        let expected = "hello from the origin, /hello\n"
        let answer = try request.response(bodyBytes: expected.utf8.count)
        #expect(answer.head.hasPrefix("HTTP/1.1 200"), "\(answer.head)")
        #expect(answer.body == Array(expected.utf8))
        request.expectClosedAtIdleTimeout(after: ContinuousClock.now)
        // A session writes its log line before it closes the client, so the count is final here.
        #expect(try request.proxy.logLines().count == 1, "the idle wait itself is not a request")
    }

    // MARK: - The head deadline

    /// A head that trickles in a byte every 100 ms: a read limit that restarted with each byte would
    /// never pass, so the 408 must come while the bytes are still coming. (On the test's clock,
    /// ``HeadDeadlinePlaybookTests`` checks the limit left after a late byte, and a byte past it.)
    @Test("a head's deadline counts from its first byte: bytes trickling in do not extend it")
    func headDeadlineIsAbsolute() throws {
        let factory = try compliantChain()
        let origin = try TestHTTPOrigin(directory: factory.directory)
        let proxy = try TestProxy.start(factory, policyXML: insecureLocalhost) { $0.headTimeout = .milliseconds(1500) }
        defer { proxy.stop() }
        let client = try #require(connectLoopback(port: proxy.port))
        defer { close(client) }
        let start = ContinuousClock.now
        sendAll(client, Array("GET http://localhost:\(origin.port)/slow HTTP/1.1\r\n".utf8))
        var answer: [UInt8] = []
        var trickled = 0
        // Up to 60 s of trickle: far past the deadline however slow the machine.
        while answer.isEmpty, trickled < 600 {
            answer = receiveAvailable(client, wait: 0.1) ?? []
            guard answer.isEmpty else { break }
            guard sendAll(client, Array("X".utf8)) else { break }
            trickled += 1
        }
        let answered = ContinuousClock.now - start
        #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 408 Request Timeout"), "\(trickled) bytes")
        #expect(trickled < 600, "no 408 while bytes kept coming")
        #expect(answered >= .milliseconds(1400), "408 after \(answered): before the deadline")
    }

    @Test("a tunnel's first bytes are due within the head timeout of the 200, however they trickle in")
    func tunnelFirstBytesDeadline() throws {
        let factory = try compliantChain()
        let upstream = try SilentUpstream()
        let proxy = try TestProxy.start(factory, policyXML: insecureLocalhost) { $0.headTimeout = .milliseconds(1500) }
        defer { proxy.stop() }
        let client = try #require(connectLoopback(port: proxy.port))
        defer { close(client) }
        sendAll(
            client,
            Array("CONNECT localhost:\(upstream.port) HTTP/1.1\r\nHost: localhost:\(upstream.port)\r\n\r\n".utf8))
        let established = try #require(receiveHead(client))
        #expect(established.head.hasPrefix("HTTP/1.1 200"), "\(established.head)")
        let start = ContinuousClock.now
        // The start of a TLS record, then one more byte just before the deadline (the scenario: a
        // device trickling its bytes, so the pause is a sleep).
        sendAll(client, [0x16, 0x03, 0x01])
        Thread.sleep(forTimeInterval: 1.2)
        sendAll(client, [0x00])
        #expect(awaitPeerClose(client, wait: 5))
        let closed = ContinuousClock.now - start
        #expect(closed >= .milliseconds(1400) && closed < .milliseconds(2400), "closed after \(closed)")
        let line = try #require(try proxy.waitForLogLines(1).first)
        // A TLS record begun and never finished is a hello that cannot be read: blocked, not just closed.
        #expect(
            line.fields["hello_unreadable"] as? String == "the ClientHello was not complete within 1.5 s", "\(line)")
        #expect(line.action == "blocked", "\(line)")
    }
}
