import ATSPolicy
import Foundation
import ProxyCore
import TLSTestSupport
import Testing

/// Plain http:// through the proxy with curl, to a real HTTP/1.1 origin (Python's http.server).
@Suite("Plain HTTP forwarding", .startsProcesses(timeLimit: .seconds(60)))
struct PlainHTTPForwardingTests {
    struct Setup {
        let factory: CertificateFactory
        let origin: TestHTTPOrigin
        let proxy: TestProxy

        func curl(_ arguments: [String]) throws -> CommandResult {
            try runCommand(
                "/usr/bin/curl", ["-sS", "--max-time", "20", "--proxy", "http://127.0.0.1:\(proxy.port)"] + arguments)
        }

        func url(_ path: String) -> String { "http://localhost:\(origin.port)\(path)" }
    }

    static func setUp(
        policyXML: String = insecureLocalhost, mode: EnforcementMode = .enforce,
        configure: (inout ProxySettings) -> Void = { _ in }
    ) throws -> Setup {
        let factory = try compliantChain()
        let origin = try TestHTTPOrigin(directory: factory.directory)
        let proxy = try TestProxy.start(factory, policyXML: policyXML, mode: mode, configure: configure)
        return Setup(factory: factory, origin: origin, proxy: proxy)
    }

    @Test("a GET is forwarded and logged as allowed, with the origin's status")
    func get() throws {
        let setup = try Self.setUp()
        defer { setup.proxy.stop() }
        let result = try setup.curl([setup.url("/hello")])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput == "hello from the origin, /hello\n")
        let line = try setup.proxy.onlyLogLine()
        #expect(line["action"] as? String == "allowed")
        #expect(line["compliant"] as? Bool == true)
        #expect(line["scheme"] as? String == "http")
        #expect(line["method"] as? String == "GET")
        #expect(line["status"] as? Int == 200)
        #expect((line["rule"] as? [String: Any])?["kind"] as? String == "exception")
        #expect((line["bytes_down"] as? Int ?? 0) > 30)
    }

    @Test("the origin gets origin-form, its own Host, a Via line, and no proxy hop-by-hop fields")
    func headRewritten() throws {
        let setup = try Self.setUp()
        defer { setup.proxy.stop() }
        let result = try setup.curl(["-H", "Host: elsewhere.example", "-H", "Keep-Alive: 5", setup.url("/headers?x=1")])
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.first == "GET /headers?x=1 HTTP/1.1")
        #expect(lines.contains("Host: localhost:\(setup.origin.port)"))
        #expect(lines.contains("Via: 1.1 atsproxy"))
        #expect(
            !lines.contains { $0.lowercased().hasPrefix("proxy-connection") || $0.lowercased().hasPrefix("keep-alive") }
        )
    }

    @Test("keep-alive: two requests share one client connection and one origin connection, and log two lines")
    func keepAlive() throws {
        let setup = try Self.setUp()
        defer { setup.proxy.stop() }
        let result = try setup.curl(["-D", "-", setup.url("/one"), setup.url("/two")])
        #expect(result.status == 0, "\(result.standardError)")
        let connections = result.standardOutput.split(whereSeparator: \.isNewline).filter {
            $0.hasPrefix("X-Origin-Connection:")
        }
        #expect(connections.count == 2)
        #expect(Set(connections).count == 1, "both responses should come over one origin connection: \(connections)")
        #expect(result.standardOutput.contains("Via: 1.1 atsproxy"))
        let lines = try setup.proxy.waitForLogLines(2)
        #expect(lines.count == 2)
        #expect(Set(lines.compactMap { $0.fields["client"] as? String }).count == 1)
    }

    @Test("request bodies stream through, with Content-Length and chunked", arguments: [false, true])
    func requestBody(chunked: Bool) throws {
        let setup = try Self.setUp()
        defer { setup.proxy.stop() }
        let bodyPath = setup.factory.path("body.bin")
        let body = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try body.write(to: URL(fileURLWithPath: bodyPath))
        var arguments = ["--data-binary", "@\(bodyPath)", "-o", setup.factory.path("echoed.bin")]
        if chunked { arguments += ["-H", "Transfer-Encoding: chunked"] }
        let result = try setup.curl(arguments + [setup.url("/echo")])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: setup.factory.path("echoed.bin"))) == body)
        let line = try setup.proxy.onlyLogLine()
        #expect((line["bytes_up"] as? Int ?? 0) > 300_000)
    }

    @Test("a chunked response comes through whole")
    func chunkedResponse() throws {
        let setup = try Self.setUp()
        defer { setup.proxy.stop() }
        let result = try setup.curl([setup.url("/chunked?n=40")])
        #expect(result.standardOutput.split(separator: "\n").count == 40)
        #expect(result.standardOutput.hasSuffix("chunk 39\n"))
    }

    @Test("a response delimited by the origin's close reaches the client, which is told the connection ends")
    func untilClose() throws {
        let setup = try Self.setUp()
        defer { setup.proxy.stop() }
        let result = try setup.curl(["-D", "-", setup.url("/close")])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.contains("Connection: close"))
        #expect(result.standardOutput.hasSuffix("until the origin closes\n"))
        #expect(try setup.proxy.onlyLogLine()["action"] as? String == "allowed")
    }

    @Test("an interim 1xx response is passed on before the final one")
    func interimResponse() throws {
        let setup = try Self.setUp()
        defer { setup.proxy.stop() }
        let result = try setup.curl(["-D", "-", setup.url("/continue")])
        #expect(result.standardOutput.contains("103 Early Hints"))
        #expect(result.standardOutput.hasSuffix("after the hints\n"))
    }

    @Test("16 interim responses are passed on; an origin that sends more gets the client a 502 naming the limit")
    func interimLimit() throws {
        let setup = try Self.setUp()
        defer { setup.proxy.stop() }
        let sixteen = try setup.curl(["-D", "-", setup.url("/hints?count=16")])
        #expect(sixteen.standardOutput.components(separatedBy: "102 Processing").count - 1 == 16)
        #expect(sixteen.standardOutput.hasSuffix("after the hints\n"))
        let more = try setup.curl(["-D", "-", setup.url("/hints?count=17")])
        #expect(more.standardOutput.contains("HTTP/1.1 502 Bad Gateway"), "\(more.standardOutput)")
        #expect(more.standardOutput.contains("more than 16 interim (1xx) responses"))
    }

    @Test("a large body arrives byte for byte")
    func largeBody() throws {
        let setup = try Self.setUp()
        defer { setup.proxy.stop() }
        let result = try setup.curl(["-o", "/dev/null", "-w", "%{size_download}", setup.url("/big?bytes=20000000")])
        #expect(result.standardOutput == "20000000")
        #expect((try setup.proxy.onlyLogLine()["bytes_down"] as? Int ?? 0) > 20_000_000)
    }

    @Test("report mode forwards cleartext ATS would block, and logs it as non-compliant")
    func reportMode() throws {
        let setup = try Self.setUp(policyXML: fullATSForLocalhost, mode: .report)
        defer { setup.proxy.stop() }
        let result = try setup.curl([setup.url("/hello")])
        #expect(result.standardOutput == "hello from the origin, /hello\n")
        let line = try setup.proxy.onlyLogLine()
        #expect(line["action"] as? String == "allowed")
        #expect(line["compliant"] as? Bool == false)
        #expect(line["violations"] as? [String] == ["cleartext"])
        #expect((line["error"] as? [String: Any])?["nsurl"] as? Int == -1022)
    }

    @Test("enforce mode blocks the same request with Apple's words, and the origin never sees it")
    func enforceBlocks() throws {
        let setup = try Self.setUp(policyXML: fullATSForLocalhost)
        defer { setup.proxy.stop() }
        let result = try setup.curl(["-D", "-", setup.url("/hello")])
        #expect(result.standardOutput.hasPrefix("HTTP/1.1 403 Forbidden"))
        #expect(result.standardOutput.contains("X-ATS-Error: -1022"))
        #expect(try setup.proxy.onlyLogLine()["action"] as? String == "blocked")
    }

    @Test("nothing listening at the origin: 502 and a failed log line that still names the rule")
    func originDown() throws {
        let setup = try Self.setUp()
        defer { setup.proxy.stop() }
        let result = try setup.curl(["-D", "-", "http://localhost:1/"])
        #expect(result.standardOutput.hasPrefix("HTTP/1.1 502 Bad Gateway"))
        let line = try setup.proxy.onlyLogLine()
        #expect(line["action"] as? String == "failed")
        #expect(line["upstream_error"] is String)
        #expect((line["rule"] as? [String: Any])?["kind"] as? String == "exception")
    }

    @Test("pipelined requests are answered in order on one connection")
    func pipelined() throws {
        let setup = try Self.setUp()
        defer { setup.proxy.stop() }
        let request =
            "GET \(setup.url("/a")) HTTP/1.1\r\nHost: localhost\r\n\r\n"
            + "GET \(setup.url("/b")) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        let text = String(decoding: exchangeRaw(port: setup.proxy.port, Array(request.utf8)), as: UTF8.self)
        let first = try #require(text.range(of: "hello from the origin, /a"))
        let second = try #require(text.range(of: "hello from the origin, /b"))
        #expect(first.lowerBound < second.lowerBound)
        #expect(try setup.proxy.waitForLogLines(2).count == 2)
    }

    @Test("a head with too many lines gets 431, and the proxy keeps serving")
    func headTooLarge() throws {
        let setup = try Self.setUp()
        defer { setup.proxy.stop() }
        let fields = (0..<150).map { "X-Filler-\($0): y\r\n" }.joined()
        let request = "GET \(setup.url("/")) HTTP/1.1\r\nHost: localhost\r\n\(fields)\r\n"
        let text = String(decoding: exchangeRaw(port: setup.proxy.port, Array(request.utf8)), as: UTF8.self)
        let after = try setup.curl([setup.url("/after")])
        #expect(text.hasPrefix("HTTP/1.1 431"))
        #expect(after.standardOutput == "hello from the origin, /after\n")
        // The refused request's line names what its request line had: the method, host and port.
        let refused = try #require(try setup.proxy.waitForLogLines(2).first { $0.upstreamError != nil })
        #expect(refused.method == "GET" && refused.host == "localhost", "\(refused)")
        #expect(refused.fields["port"] as? Int == Int(setup.origin.port), "\(refused)")
        #expect(refused.upstreamError?.hasPrefix("bad request: ") == true, "\(refused)")
    }

    @Test(
        "a refused head for the proxy's own pages is logged without a method or host, as a complete one is not logged",
        arguments: ["GET http://atsproxy.test/ca.pem", "CONNECT atsproxy.test:443", "GET /"])
    func refusedPageRequest(_ requestLine: String) throws {
        let setup = try Self.setUp()
        defer { setup.proxy.stop() }
        let fields = (0..<150).map { "X-Filler-\($0): y\r\n" }.joined()
        let request = "\(requestLine) HTTP/1.1\r\nHost: atsproxy.test\r\n\(fields)\r\n"
        let text = String(decoding: exchangeRaw(port: setup.proxy.port, Array(request.utf8)), as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 431"))
        let line = try #require(try setup.proxy.waitForLogLines(1).first)
        #expect(line.method == "-" && line.host == "-", "\(line)")
    }

    @Test("a request line at fault is logged without a method or host")
    func requestLineAtFault() throws {
        let setup = try Self.setUp()
        defer { setup.proxy.stop() }
        let request = "GET  \(setup.url("/")) HTTP/1.1\r\nHost: localhost\r\n\r\n"
        let text = String(decoding: exchangeRaw(port: setup.proxy.port, Array(request.utf8)), as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 400"))
        let line = try #require(try setup.proxy.waitForLogLines(1).first)
        #expect(line.method == "-" && line.host == "-", "\(line)")
    }

    @Test("a head that trickles in past the head timeout gets 408, even though bytes keep coming")
    func slowHead() throws {
        let setup = try Self.setUp { $0.headTimeout = .milliseconds(600) }
        defer { setup.proxy.stop() }
        let descriptor = try #require(connectLoopback(port: setup.proxy.port))
        defer { close(descriptor) }
        var answer: [UInt8] = []
        for byte in "GET \(setup.url("/slow")) HTTP/1.1\r\nX-Slow: ".utf8 {
            _ = withUnsafeBytes(of: byte) { send(descriptor, $0.baseAddress, 1, Int32(MSG_NOSIGNAL)) }
            Thread.sleep(forTimeInterval: 0.05)  // The scenario: a head trickled in, a byte every 50 ms.
            if let received = receiveAvailable(descriptor), !received.isEmpty {
                answer = received
                break
            }
        }
        if answer.isEmpty { answer = receiveAvailable(descriptor, wait: 2) ?? [] }
        #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 408"))
        // Its request line never came whole: the line names no request.
        let line = try #require(try setup.proxy.waitForLogLines(1).first)
        #expect(line.method == "-" && line.host == "-", "\(line)")
    }

    @Test("a head whose request line came whole, and no more in time: the 408's line names the request")
    func headTimeoutAfterRequestLine() throws {
        let setup = try Self.setUp { $0.headTimeout = .milliseconds(300) }
        defer { setup.proxy.stop() }
        let descriptor = try #require(connectLoopback(port: setup.proxy.port))
        defer { close(descriptor) }
        sendAll(descriptor, Array("POST \(setup.url("/upload")) HTTP/1.1\r\nX-Slow: ".utf8))
        let answer = receiveAvailable(descriptor, wait: 120) ?? []  // returns with the 408; the wait only bounds a hang
        #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 408"))
        let line = try #require(try setup.proxy.waitForLogLines(1).first)
        #expect(line.method == "POST" && line.host == "localhost", "\(line)")
        #expect(line.fields["port"] as? Int == Int(setup.origin.port), "\(line)")
        #expect(line.upstreamError?.hasPrefix("request timeout: ") == true, "\(line)")
    }

    @Test("a client that connects and says nothing is closed after the head timeout, without a log line")
    func silentClient() throws {
        let setup = try Self.setUp { $0.headTimeout = .milliseconds(300) }
        defer { setup.proxy.stop() }
        let descriptor = try #require(connectLoopback(port: setup.proxy.port))
        defer { close(descriptor) }
        let answer = receiveAvailable(descriptor, wait: 3)
        #expect(
            answer == [],
            "the proxy should close quietly, got \(answer.map { String(decoding: $0, as: UTF8.self) } ?? "nothing")")
        // The loop writes a session's line when it ends, and it ended before the next client came:
        // once that client's line is there, a line for the silent one would be there before it.
        let after = try setup.curl([setup.url("/after")])
        #expect(after.standardOutput == "hello from the origin, /after\n", "\(after.standardError)")
        let lines = try setup.proxy.waitForLogLines(1)
        #expect(lines.map(\.method) == ["GET"], "\(lines)")
        #expect(lines.first?.fields["host"] as? String == "localhost", "\(lines)")
    }
}
