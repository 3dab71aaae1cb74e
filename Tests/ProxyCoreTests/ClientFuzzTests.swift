import Foundation
import ProxyCore
import ProxyWire
import TLSTestSupport
import Testing

/// Whatever a client sends, the proxy answers what its request parser and its routing decide (a
/// 4xx or 5xx, never a request that reaches a server) or closes, and keeps serving everyone else.
@Suite("Hostile clients", .startsProcesses(timeLimit: .seconds(60)))
struct ClientFuzzTests {

    /// Inputs built to reach the parser's corners: valid-looking starts with damage, random bytes,
    /// TLS records where a request belongs, oversized lines and bodies that lie about their size.
    /// The targets that parse name port 1, where nothing listens (as in the other tests): no
    /// request reaches a server, so none can get that server's answer.
    static func hostileInput(_ random: inout SplitMix64) -> [UInt8] {
        let starts = [
            "GET http://localhost:1/ HTTP/1.1\r\n", "CONNECT localhost:1 HTTP/1.1\r\n",
            "POST http://localhost:1/ HTTP/1.1\r\n",
            "GET / HTTP/1.1\r\n", "CONNECT [::1 HTTP/1.1\r\n", "GET http://%zz/ HTTP/1.1\r\n",
            "\u{16}\u{03}\u{01}\u{02}\u{00}",
            "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "GET http://localhost:99999/ HTTP/1.1\r\n",
            "CONNECT localhost:0 HTTP/1.1\r\n",
        ]
        let fields = [
            "Host: localhost:1\r\n", "Content-Length: 5\r\n", "Content-Length: -1\r\n",
            "Transfer-Encoding: chunked\r\n",
            "Transfer-Encoding: gzip\r\n", "Host: a\r\nHost: b\r\n", " folded\r\n", "X: \u{00}\r\n",
            String(repeating: "A", count: 20_000) + ": b\r\n", "Content-Length: 99999999999999999999\r\n",
        ]
        var bytes = Array(starts.randomElement(using: &random)!.utf8)
        for _ in 0..<Int.random(in: 0...4, using: &random) {
            bytes += Array(fields.randomElement(using: &random)!.utf8)
        }
        if Bool.random(using: &random) { bytes += Array("\r\n".utf8) }
        for _ in 0..<Int.random(in: 0...64, using: &random) { bytes.append(UInt8.random(in: 0...255, using: &random)) }
        // Flip a few bytes anywhere.
        for _ in 0..<Int.random(in: 0...3, using: &random) where !bytes.isEmpty {
            bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
        }
        return bytes
    }

    /// The statuses the proxy may answer `input` with, sent whole and followed by the client's
    /// half-close; none: it closes without answering. The request parser's verdict sorts the
    /// inputs (the parser has tests of its own in ProxyWireTests; here the session must act on it):
    /// - a head the parser rejects gets the parser's status;
    /// - an incomplete head is closed quietly at the client's end of input;
    /// - a complete head is routed: an absolute http:// URL is refused (400, not a host; 403, ATS
    ///   requires HTTPS for it; its body framing's status) or forwarded to a port where nothing
    ///   listens (502); a CONNECT is refused (400) or its upstream is unreachable (502); any other
    ///   target is not a proxy request (400). A request for the proxy's own pages (origin-form, or
    ///   for the onboarding host) gets 404, as this proxy serves none; a CONNECT to the onboarding
    ///   host 503 (no CA).
    ///   Undamaged, localhost:1 leaves one answer.
    static func allowedStatuses(_ input: [UInt8]) -> Set<Int> {
        var parser = RequestHeadParser(origin: RequestOrigin(scheme: "http", host: OnboardingHost.name, port: 80))
        switch parser.consume(input) {
        case .failed(let error):
            return [error.status]
        case .needMoreData:
            return []
        case .complete(let head, _):
            if head.arrivedInOriginForm { return [404] }
            switch head.target {
            case .absolute("http", let host, _, _)
            where host == OnboardingHost.name || host == OnboardingHost.name + ".":
                return [404]
            case .authority(let host, _)
            where head.method == "CONNECT" && (host == OnboardingHost.name || host == OnboardingHost.name + "."):
                return [503]
            case .absolute("http", let host, let port, _):
                // localhost:1 as written: cleartext is allowed there, so only framing or the
                // unreachable port can answer. A damaged host or port may be refused instead.
                let asWritten = host == "localhost" && port == 1
                do {
                    _ = try head.bodyFraming()
                    return asWritten ? [502] : [400, 403, 502]
                } catch {
                    return asWritten ? [error.status] : [400, 403, error.status]
                }
            case .authority(let host, let port) where head.method == "CONNECT":
                // A CONNECT that declares a body is refused before anything is dialled.
                if case .failure(let error) = Result(catching: { () throws(HeadError) in try head.bodyFraming() }) {
                    return [error.status]
                }
                return host == "localhost" && port == 1 ? [502] : [400, 502]
            default:
                return [400]
            }
        }
    }

    @Test("300 hostile clients each get the status their input calls for, or a close, and the proxy serves throughout")
    func hostileClients() throws {
        let factory = try compliantChain()
        let origin = try TestHTTPOrigin(directory: factory.directory)
        let proxy = try TestProxy.start(factory, policyXML: insecureLocalhost) {
            $0.headTimeout = .seconds(2)
        }
        defer { proxy.stop() }
        var random = SplitMix64(state: 20_261_121)
        var classes: [String: Int] = [:]
        for index in 0..<300 {
            let input = Self.hostileInput(&random)
            let allowed = Self.allowedStatuses(input)
            classes[allowed.isEmpty ? "close" : allowed.sorted().map(String.init).joined(separator: "/"), default: 0] +=
                1
            let answer = String(decoding: exchangeRaw(port: proxy.port, input), as: UTF8.self)
            let input80 = String(decoding: input.prefix(80), as: UTF8.self).debugDescription
            if allowed.isEmpty {
                #expect(answer.isEmpty, "input \(index) \(input80) got \(answer.prefix(120).debugDescription)")
            } else {
                // One answer, which closes the connection: nothing follows its body.
                let response = RawResponse(Array(answer.utf8))
                let body = answer.range(of: "\r\n\r\n").map { answer[$0.upperBound...] } ?? ""
                #expect(
                    response.status.map(allowed.contains) == true && response.header("Connection") == "close"
                        && response.header("Content-Length") == String(body.utf8.count),
                    "input \(index) \(input80) may get \(allowed.sorted()), got \(answer.prefix(160).debugDescription)")
            }
            // Everyone else is still served, all along.
            if index % 50 == 49 {
                let request =
                    "GET http://localhost:\(origin.port)/during-\(index) HTTP/1.1\r\nHost: localhost:\(origin.port)\r\n"
                    + "Connection: close\r\n\r\n"
                let served = String(decoding: exchangeRaw(port: proxy.port, Array(request.utf8)), as: UTF8.self)
                #expect(served.hasPrefix("HTTP/1.1 200 OK\r\n"), "after input \(index): \(served.prefix(120))")
                #expect(served.hasSuffix("\r\n\r\nhello from the origin, /during-\(index)\n"), "after input \(index)")
            }
        }
        // The inputs must reach each kind of verdict, or the test proves little.
        #expect(["close", "400", "431", "505", "502"].allSatisfy { classes[$0, default: 0] > 0 }, "\(classes)")
        let good = try runCommand(
            "/usr/bin/curl",
            [
                "-sS", "--max-time", "20", "--proxy", "http://127.0.0.1:\(proxy.port)",
                "http://localhost:\(origin.port)/after",
            ])
        #expect(good.status == 0, "\(good.standardError)")
        #expect(good.standardOutput == "hello from the origin, /after\n", "\(good.standardError)")
    }
}
