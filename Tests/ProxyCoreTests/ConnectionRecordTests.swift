import ATSPolicy
import Foundation
import LogRecord
import ProxyCore
import Testing
import TextFormats

@Suite("Connection log records")
struct ConnectionRecordTests {
    @Test("a blocked CONNECT carries every field of the log contract")
    func blockedConnect() throws {
        let xml = "<plist version=\"1.0\"><dict/></plist>"
        let policy = try PolicyLoader.load(bytes: Array(xml.utf8), file: "p.plist")
        let requirements = try policy.requirements(forHost: "legacy.example.com", explaining: false)
        let leaf = CertificateFacts(
            subject: "CN=legacy.example.com", keyType: .rsa, keyBits: 2048,
            signatureAlgorithm: "sha256WithRSAEncryption",
            signatureHash: .sha256, notBefore: 1_767_225_600, notAfter: 1_774_915_200, dnsNames: ["legacy.example.com"])
        let observed = ObservedConnection(
            tlsVersion: .tls10, cipherSuite: CipherSuite(id: 0xC013), keyExchangeGroup: .secp256r1, chain: [leaf],
            trust: .systemRoot,
            embeddedSCTs: 3, evaluationTime: 1_770_000_000)
        var record = ConnectionRecord(
            startedAt: 1_770_000_000_042, client: "127.0.0.1:50312", method: "CONNECT", scheme: .https,
            host: "legacy.example.com", port: 443, action: .blocked)
        record.verdict = policy.verdict(for: requirements, observed: observed)
        record.noteProbe(ProbeResult(observed: observed))
        record.serverNameIndication = "legacy.example.com"
        record.deviceVersion = .tls12
        record.deviceCipher = CipherSuite(id: 0xC02F)
        record.durationMilliseconds = 12
        record.upstreamAddress = "203.0.113.7:443"
        let json = record.json
        // Every field of the contract, in its order, and nothing else: null where this connection
        // has nothing to say (no ClientHello naming another host, no tunnel, no origin status,
        // the upstream was reached).
        let expected: [(String, JSONValue)] = [
            ("ts", .string("2026-02-02T02:40:00.042Z")),
            ("client", .string("127.0.0.1:50312")),
            ("method", .string("CONNECT")),
            ("scheme", .string("https")),
            ("host", .string("legacy.example.com")),
            ("port", .int(443)),
            ("sni", .string("legacy.example.com")),
            ("rule", .object([("kind", .string("default")), ("key", .null)])),
            ("compliant", .bool(false)),
            ("action", .string("blocked")),
            ("violations", .array([.string("tls_version")])),
            ("error", .object([("nsurl", .int(-1200)), ("ssl", .int(-9836))])),
            // The verdict's own words, one per violation.
            ("explanations", .array(try #require(record.verdict).violations.map { .string($0.explanation) })),
            ("sni_check", .null),
            ("tunnel", .null),
            ("hello_unreadable", .null),
            (
                "tls",
                .object([
                    ("version", .string("TLSv1.0")),
                    ("cipher", .string("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA")),
                    ("trust", .string("system_root")),
                    (
                        "certificates",
                        .array([
                            .object([
                                ("subject", .string("CN=legacy.example.com")),
                                ("key_type", .string("rsa")),
                                ("key_bits", .int(2048)),
                                ("sig_alg", .string("sha256WithRSAEncryption")),
                                ("not_before", .string("2026-01-01T00:00:00Z")),
                                ("not_after", .string("2026-03-31T00:00:00Z")),
                            ])
                        ])
                    ),
                    // The key exchange, by the IANA registry's name and number.
                    ("group", .object([("name", .string("secp256r1")), ("codepoint", .int(23))])),
                ])
            ),
            (
                "observed",
                .object([
                    ("version", .string("TLSv1.2")), ("cipher", .string("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")),
                ])
            ),
            ("status", .null),
            ("upstream", .string("203.0.113.7:443")),
            ("upstream_error", .null),
            ("bytes_up", .int(0)),
            ("bytes_down", .int(0)),
            ("duration_ms", .int(12)),
            // Added for intercept mode (docs/request-log.md): null in tunnel mode.
            ("kind", .string("connection")),
            ("connection_id", .int(0)),
            ("inspect", .null),
            ("passthrough", .null),
            ("intercept_failed", .null),
            ("client_alert", .null),
            ("requests", .null),
            ("upstream_resumed", .null),
            // Why upstream_error is set, as a code: null when it is not.
            ("failure", .null),
            // Nothing timed on a record made by hand.
            ("timing", .null),
            // No User-Agent in a request made by hand.
            ("app", .null),
            // Through the proxy setting: no original destination, no name to check against one.
            ("capture", .string("proxy")),
            ("original_destination", .null),
            ("server_name_mismatch", .null),
            // Not a WireGuard device, and no DNS answer of the proxy's named the destination.
            ("device", .null),
            ("dns_name", .null),
        ]
        guard case .object(let fields) = json else {
            Issue.record("not an object: \(json.serialized)")
            return
        }
        #expect(fields.map(\.0) == expected.map(\.0))
        for (key, value) in expected {
            #expect(json[key] == value, "\(key): \(json[key]?.serialized ?? "missing")")
        }
        #expect(record.verdict?.violations.count == 1)
        #expect(json.serialized.hasPrefix(#"{"ts":"2026-02-02T02:40:00.042Z","client":"127.0.0.1:50312""#))
        // What is written splices the probe's serialized facts in: byte for byte the same line.
        #expect(record.logLine == json.serializedBytes)
    }

    @Test("the writer's keys are LogRecord's ConnectionField cases, in order, for every line it writes")
    func keysAreTheSchema() throws {
        var record = ConnectionRecord(
            startedAt: 0, client: "[::1]:1", method: "CONNECT", scheme: .https, host: "a.example", port: 443,
            action: .allowed)
        let schema = ConnectionField.allCases.map(\.rawValue)
        #expect(Self.keys(of: record.json) == schema)
        #expect(Self.keys(of: try JSONValue(parsing: record.logLine)) == schema)
        #expect(Self.keys(of: try JSONValue(parsing: record.openLine)) == schema)
        record.fail(FailureReason(.closedIdle, "closed: idle"))
        #expect(Self.keys(of: try JSONValue(parsing: record.logLine)) == schema)
    }

    @Test("the example lines of docs/log-format.md have the schema's fields, in order")
    func documentedFields() throws {
        let docs = try String(contentsOfFile: Self.repository + "/docs/log-format.md", encoding: .utf8)
        let example = try #require(
            docs.components(separatedBy: "```json\n").dropFirst().first?.components(separatedBy: "```").first)
        let lines = example.split(separator: "\n").map { $0.replacingOccurrences(of: "[…]", with: "[]") }
        #expect(lines.count == 2)
        for line in lines {
            #expect(Self.keys(of: try JSONValue(parsing: line)) == ConnectionField.allCases.map(\.rawValue))
        }
    }

    @Test("every failure is written with its code beside its sentence", arguments: Failure.allCases)
    func failureCode(_ failure: Failure) throws {
        var record = ConnectionRecord(
            startedAt: 0, client: "[::1]:1", method: "CONNECT", scheme: .https, host: "a.example", port: 443,
            action: .failed)
        record.fail(FailureReason(failure, "words"))
        let line = try JSONValue(parsing: record.logLine)
        #expect(line[ConnectionField.failure] == .string(failure.rawValue))
        #expect(line[ConnectionField.upstreamError] == .string("words"))
    }

    static func keys(of json: JSONValue) -> [String] {
        guard case .object(let fields) = json else { return [] }
        return fields.map(\.0)
    }

    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    @Test("an unreachable upstream is a failed action with the reason, and no TLS facts")
    func failed() {
        var record = ConnectionRecord(
            startedAt: 0, client: "[::1]:1", method: "CONNECT", scheme: .https, host: "down.example", port: 443,
            action: .failed)
        record.fail(FailureReason(.connectFailed, "cannot connect to down.example port 443: Connection refused"))
        let json = record.json
        #expect(json["failure"] == .string("connect_failed"))
        #expect(json["action"] == .string("failed"))
        #expect(json["tls"] == .null)
        #expect(json["observed"] == .null)
        #expect(json["upstream_error"] == .string("cannot connect to down.example port 443: Connection refused"))
        #expect(json["ts"] == .string("1970-01-01T00:00:00.000Z"))
        #expect(record.logLine == json.serializedBytes)
    }

    @Test("an unreadable ClientHello makes the line non-compliant, whatever the CONNECT's verdict, and says why")
    func helloUnreadable() throws {
        let policy = try PolicyLoader.load(bytes: Array("<plist version=\"1.0\"><dict/></plist>".utf8), file: "p.plist")
        let requirements = try policy.requirements(forHost: "good.example", explaining: false)
        var record = ConnectionRecord(
            startedAt: 0, client: "127.0.0.1:1", method: "CONNECT", scheme: .https, host: "good.example", port: 443,
            action: .blocked)
        record.verdict = policy.verdict(for: requirements, observed: nil)
        record.tunnelProtocol = .tls
        #expect(record.json["hello_unreadable"] == .null)
        record.helloUnreadable = #"malformed ClientHello: the SNI "a b" is not a host name: it contains 0x20 (' ')"#
        let json = record.json
        #expect(
            json["hello_unreadable"]
                == .string(#"malformed ClientHello: the SNI "a b" is not a host name: it contains 0x20 (' ')"#))
        #expect(json["compliant"] == .bool(false))
        #expect(json["action"] == .string("blocked"))
        #expect(record.logLine == json.serializedBytes)
    }
}
