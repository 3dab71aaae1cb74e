import ATSPolicy
import Foundation
import ProxyCore
import Synchronization
import TLSTestSupport
import Testing

/// Issue 27, items 1 and 5, end to end: curl through a proxy on a real loop to an origin of the
/// test's own (``RawTCPServer``) that writes exactly the review's bytes, each response in one write.
@Suite("Plain HTTP forwarding: response framing", .startsProcesses(timeLimit: .seconds(60)))
struct ResponseFramingForwardingTests {
    /// The origin's connections, counted as they are accepted.
    final class Connections: Sendable {
        let count = Atomic<Int>(0)
    }

    /// An origin that answers each request head on a connection by its path: `/surplus` (5 bytes
    /// framed, a smuggled response after them), `/head` (a HEAD answered with a 44-byte body),
    /// `/te/<value>` (a chunked body under that Transfer-Encoding, a smuggled response after its
    /// last chunk), anything else `answer <path> on <connection>`.
    static func origin(_ connections: Connections) throws -> RawTCPServer {
        try RawTCPServer { socket in
            let number = connections.count.add(1, ordering: .relaxed).newValue
            while let (head, _) = receiveHead(socket) {
                let path = head.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
                let smuggled = ResponseSurplusPlaybookTests.smuggled
                let response: String
                if path == "/surplus" {
                    response = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello" + smuggled
                } else if path == "/head" {
                    response =
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 44\r\n\r\n"
                        + ResponseSurplusPlaybookTests.headBody
                } else if path.hasPrefix("/te/") {
                    let value = path.dropFirst(4).removingPercentEncoding ?? ""
                    response = ExchangeTransferEncodingPlaybookTests.response(value)
                } else {
                    let body = "answer \(path) on \(number)"
                    response = "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
                }
                guard sendAll(socket, Array(response.utf8)) else { return }
            }
        }
    }

    static func curl(_ proxy: TestProxy, _ arguments: [String]) throws -> CommandResult {
        try runCommand(
            "/usr/bin/curl", ["-sS", "--max-time", "20", "--proxy", "http://127.0.0.1:\(proxy.port)"] + arguments)
    }

    @Test(
        "a keep-alive client: the second request gets its own answer, not the origin's surplus; the first line counts it"
    )
    func surplusKeepAlive() throws {
        let factory = try compliantChain()
        let connections = Connections()
        let origin = try Self.origin(connections)
        let proxy = try TestProxy.start(factory, policyXML: insecureLocalhost)
        defer { proxy.stop() }
        let base = "http://localhost:\(origin.port)"
        let result = try Self.curl(proxy, ["-D", "-", "\(base)/surplus", "\(base)/after"])
        #expect(result.standardOutput.contains("hello"), "\(result.standardOutput)")
        #expect(
            result.standardOutput.contains("answer /after on 2"), "a new origin connection: \(result.standardOutput)")
        #expect(!result.standardOutput.contains("X-Smuggled") && !result.standardOutput.contains("SPLIT!"))
        let lines = try proxy.waitForLogLines(2).map(\.fields)
        #expect(lines.count == 2)
        #expect(lines.first?["failure"] as? String == "response_surplus", "\(lines)")
        let error = lines.first?["upstream_error"] as? String
        #expect(error?.hasPrefix("the origin sent 61 bytes beyond the end of its response") == true, "\(lines)")
        #expect(lines.last?["failure"] is NSNull, "\(lines)")
    }

    @Test("a HEAD answered with a 44-byte body: the next HEAD is answered, not failed with a 502 on '<'")
    func headBody() throws {
        let factory = try compliantChain()
        let origin = try Self.origin(Connections())
        let proxy = try TestProxy.start(factory, policyXML: insecureLocalhost)
        defer { proxy.stop() }
        let base = "http://localhost:\(origin.port)"
        let result = try Self.curl(proxy, ["-I", "\(base)/head", "\(base)/after"])
        #expect(!result.standardOutput.contains("502"), "\(result.standardOutput)")
        #expect(result.standardOutput.components(separatedBy: "HTTP/1.1 200").count == 3, "\(result.standardOutput)")
        let lines = try proxy.waitForLogLines(2).map(\.fields)
        #expect(lines.map { $0["status"] as? Int } == [200, 200], "\(lines)")
        #expect(lines.first?["failure"] as? String == "response_surplus")
    }

    @Test(
        "a response Transfer-Encoding that is not a known list ending in chunked: curl gets a 502 naming it",
        arguments: ["chunked, identity", "xchunked"])
    func refusedTransferEncoding(_ value: String) throws {
        let factory = try compliantChain()
        let origin = try Self.origin(Connections())
        let proxy = try TestProxy.start(factory, policyXML: insecureLocalhost)
        defer { proxy.stop() }
        let encoded = value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? value
        let result = try Self.curl(proxy, ["-D", "-", "http://localhost:\(origin.port)/te/\(encoded)"])
        #expect(result.standardOutput.hasPrefix("HTTP/1.1 502 Bad Gateway"), "\(result.standardOutput)")
        #expect(result.standardOutput.contains("Transfer-Encoding \"\(value)\""))
        #expect(!result.standardOutput.contains("SPLIT!") && !result.standardOutput.contains("hello"))
        let line = try proxy.onlyLogLine()
        #expect(line["failure"] as? String == "bad_response", "\(line)")
        #expect((line["upstream_error"] as? String)?.contains("Transfer-Encoding \"\(value)\"") == true, "\(line)")
    }
}
