import Foundation
import ProxyCore
import TLSTestSupport
import Testing

/// Whatever a client sends, the proxy answers with a 4xx or closes, and keeps serving everyone else.
@Suite("Hostile clients", .startsProcesses(timeLimit: .seconds(60)))
struct ClientFuzzTests {

    /// Inputs built to reach the parser's corners: valid-looking starts with damage, random bytes,
    /// TLS records where a request belongs, oversized lines and bodies that lie about their size.
    static func hostileInput(_ random: inout SplitMix64) -> [UInt8] {
        let starts = [
            "GET http://localhost/ HTTP/1.1\r\n", "CONNECT localhost:443 HTTP/1.1\r\n", "POST http://localhost/ HTTP/1.1\r\n",
            "GET / HTTP/1.1\r\n", "CONNECT [::1 HTTP/1.1\r\n", "GET http://%zz/ HTTP/1.1\r\n", "\u{16}\u{03}\u{01}\u{02}\u{00}",
            "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "GET http://localhost:99999/ HTTP/1.1\r\n", "CONNECT localhost:0 HTTP/1.1\r\n",
        ]
        let fields = [
            "Host: localhost\r\n", "Content-Length: 5\r\n", "Content-Length: -1\r\n", "Transfer-Encoding: chunked\r\n",
            "Transfer-Encoding: gzip\r\n", "Host: a\r\nHost: b\r\n", " folded\r\n", "X: \u{00}\r\n",
            String(repeating: "A", count: 20_000) + ": b\r\n", "Content-Length: 99999999999999999999\r\n",
        ]
        var bytes = Array(starts.randomElement(using: &random)!.utf8)
        for _ in 0..<Int.random(in: 0...4, using: &random) { bytes += Array(fields.randomElement(using: &random)!.utf8) }
        if Bool.random(using: &random) { bytes += Array("\r\n".utf8) }
        for _ in 0..<Int.random(in: 0...64, using: &random) { bytes.append(UInt8.random(in: 0...255, using: &random)) }
        // Flip a few bytes anywhere.
        for _ in 0..<Int.random(in: 0...3, using: &random) where !bytes.isEmpty {
            bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
        }
        return bytes
    }

    @Test("300 hostile clients each get a 4xx or a close, and a good client is served after them")
    func hostileClients() throws {
        let factory = try compliantChain()
        let origin = try TestHTTPOrigin(directory: factory.directory)
        let proxy = try TestProxy.start(factory, policyXML: insecureLocalhost) {
            $0.headTimeout = .seconds(2)
        }
        defer { proxy.stop() }
        var random = SplitMix64(state: 20261121)
        for index in 0..<300 {
            let input = Self.hostileInput(&random)
            let answer = String(decoding: exchangeRaw(port: proxy.port, input), as: UTF8.self)
            let acceptable = answer.isEmpty || answer.hasPrefix("HTTP/1.1 4") || answer.hasPrefix("HTTP/1.1 5")
                || answer.hasPrefix("HTTP/1.1 200")
            #expect(acceptable, "input \(index) \(input.prefix(80)) got \(answer.prefix(120))")
        }
        let good = try runCommand("/usr/bin/curl", [
            "-sS", "--max-time", "20", "--proxy", "http://127.0.0.1:\(proxy.port)", "http://localhost:\(origin.port)/after",
        ])
        #expect(good.standardOutput == "hello from the origin, /after\n", "\(good.standardError)")
    }
}
