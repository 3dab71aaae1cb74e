/// A tunnel's first bytes that look like TLS but hold no ClientHello a proxy can read completely
/// and correctly, with what the proxy must say about them: for the scanner's unit tests and the
/// proxy's end-to-end ones alike.
package struct UnreadableHello: Sendable, CustomStringConvertible {
    package let name: String
    /// What the device sends after the 200 (then it waits, reading).
    package let bytes: [UInt8]
    /// Whether the device half-closes after sending: a hello cut short shows only at the end.
    package let endsStream: Bool
    /// A part of the reason the proxy logs (`hello_unreadable`) and the scanner reports.
    package let reason: String
    /// The fatal alert's description byte the device gets in enforce mode.
    package let alert: UInt8

    package var description: String { name }

    package init(name: String, bytes: [UInt8], endsStream: Bool, reason: String, alert: UInt8) {
        self.name = name
        self.bytes = bytes
        self.endsStream = endsStream
        self.reason = reason
        self.alert = alert
    }

    package static let all: [UnreadableHello] = [
        UnreadableHello(
            name: "an empty handshake record before the hello",
            bytes: [22, 3, 1, 0, 0] + TestClientHello().records(), endsStream: false,
            reason: "a handshake record is empty", alert: 10),
        UnreadableHello(
            name: "a record over 2^14 bytes",
            bytes: TestClientHello.records(TestClientHello.sized(20_000).message, fragment: 16_385), endsStream: false,
            reason: "handshake record length 16385 exceeds 16384", alert: 22),
        UnreadableHello(
            name: "a hello over OpenSSL's limit",
            bytes: TestClientHello.records(
                [1, 0x02, 0x01, 0x45] + [UInt8](repeating: 0, count: 20_000), fragment: 16_384),
            endsStream: false,
            reason: "the ClientHello declares 131397 bytes, more than the 131400-byte buffering limit", alert: 47),
        UnreadableHello(
            name: "a hello cut short by the end of the stream",
            bytes: Array(TestClientHello().records().dropLast(40)), endsStream: true,
            reason: "the stream ended before the ClientHello was complete", alert: 50),
        UnreadableHello(
            name: "a malformed hello (odd cipher_suites length)",
            bytes: {
                var hello = TestClientHello()
                hello.cipherSuitesLengthOverride = 3
                return hello.records()
            }(),
            endsStream: false, reason: "malformed ClientHello: cipher_suites length 3 is odd", alert: 50),
        UnreadableHello(
            name: "two host_name entries",
            bytes: {
                var hello = TestClientHello()
                hello.secondServerName = Array("localhost".utf8)
                return hello.records()
            }(),
            endsStream: false, reason: "server_name_list holds two host_name entries", alert: 50),
        sni("a b", "the SNI \"a b\" is not a host name: it contains 0x20 (' ')"),
        sni("local\u{0}host", "the SNI \"local\\x00host\" is not a host name: it contains 0x00"),
        sni("café.example", "the SNI \"caf\\xc3\\xa9.example\" is not a host name: it contains 0xc3"),
        sni("[::1]", "it contains 0x5b ('[')"),
        sni("a..b", "the SNI \"a..b\" is not a host name: it has an empty label"),
        sni(".localhost", "it has an empty label"),
        sni("localhost.", "it ends with a dot"),
        sni(String(repeating: "a", count: 64) + ".example", "a label is 64 bytes long, more than 63"),
        sni(String(repeating: "abc.", count: 63) + "ab", "it is 254 bytes long, more than a DNS name's 253"),
    ]

    private static func sni(_ name: String, _ reason: String) -> UnreadableHello {
        UnreadableHello(
            name:
                "the SNI \"\(name.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 ? String($0) : "\\u{\(String($0.value, radix: 16))}" }.joined().prefix(30))\"",
            bytes: TestClientHello(serverName: name).records(), endsStream: false, reason: reason, alert: 112)
    }
}
