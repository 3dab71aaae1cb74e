import Testing

@testable import ProxyWire

/// A Host field that repeats a CONNECT target byte for byte is not parsed again: the target's
/// parse, with its port required, is taken for the Host check's. That holds only if every
/// authority that parses as a CONNECT target also parses with the port optional.
@Suite("A Host field that repeats the CONNECT target")
struct HTTPHostRepeatsTargetTests {
    static let hosts = [
        "localhost", "Example.COM", "a.b", "a.", "a..", ".", "", "1.2.3.4", "1.2.3.4.", "01.2.3.4", "127.1", "0x7f.1",
        "a.0x", "host_name", "ho%20st", "user@host", "[::1]", "[2001:DB8::1]", "[fe80::1%25eth0]", "[fe80::1%eth0]",
        "[::ffff:192.0.2.1]", "[1:2:3:4:5:6:7:8:9]", "[", "[::1", "[]", "::1", String(repeating: "a", count: 255),
        String(repeating: "a", count: 256),
    ]
    static let ports = ["", ":", ":443", ":0", ":65535", ":65536", ":00443", ":123456", ":4a", ":1:2", "x", "]:1"]

    @Test("every authority that parses as a CONNECT target parses as a Host value, to the same host and port")
    func connectTargetsAreValidHosts() {
        var generator = HTTPSeededGenerator(seed: 0x5EED_0201)
        var authorities = Self.hosts.flatMap { host in Self.ports.map { host + $0 } }
        for _ in 0..<4_000 {
            let seed = authorities[Int.random(in: 0..<authorities.count, using: &generator)]
            authorities.append(
                HTTPTestSupport.text(HTTPFuzzTests.mutate(HTTPTestSupport.bytes(seed), using: &generator)))
        }
        // Short strings over the characters that matter to the grammar, most of which parse.
        let alphabet = Array("0123456789abfxAFX.-_:[]%")
        for _ in 0..<20_000 {
            let host = String(
                (0..<Int.random(in: 1...10, using: &generator)).map { _ in
                    alphabet[Int.random(in: 0..<alphabet.count, using: &generator)]
                })
            authorities.append(host + ":" + String(Int.random(in: 0...70_000, using: &generator)))
        }
        var connectTargets = 0
        for authority in authorities {
            let bytes = HTTPTestSupport.bytes(authority)[...]
            guard case .success(let target) = HTTPAuthority.parse(bytes, portRequired: true),
                (try? RequestTargetParser.parse(method: "CONNECT", target: bytes)) != nil
            else { continue }
            connectTargets += 1
            #expect(
                HTTPAuthority.parse(bytes, portRequired: false) == .success(target), "\(authority.debugDescription)")
        }
        #expect(connectTargets > 2_000)
    }

    @Test(
        "a Host field that repeats the target or differs from it is judged as before",
        arguments: [
            ("localhost:8443", "localhost:8443", nil),
            ("localhost:8443", "LOCALHOST:8443", nil),
            ("localhost:8443", "localhost", nil),
            ("localhost:8443", "localhost:0", "the Host header has a port that is not a number from 1 to 65535"),
            ("[::1]:443", "[::1]:443", nil),
            ("[::1]:443", "::1", "the Host header has an IPv6 address that is not in brackets"),
        ] as [(String, String, String?)])
    func hostField(_ target: String, _ host: String, _ reason: String?) {
        let result = HTTPTestSupport.parseRequest("CONNECT \(target) HTTP/1.1\r\nHost: \(host)\r\n\r\n")
        #expect(HTTPTestSupport.failure(result)?.reason == reason)
    }
}
