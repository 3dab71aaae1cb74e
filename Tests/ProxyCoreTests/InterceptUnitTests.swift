import ATSPolicy
import Foundation
import LogRecord
import TLSInspection
import Testing
import TextFormats

@testable import ProxyCore

/// The small rules of intercept mode, table by table: `--passthrough` patterns, the alert names a
/// device's rejection is logged with, and the request line's contract (docs/request-log.md).
@Suite("Intercept mode's rules")
struct InterceptUnitTests {
    static let patterns: [(pattern: String, host: String, matches: Bool)] = [
        ("api.example.com", "api.example.com", true),
        ("api.example.com", "API.Example.com.", true),
        ("api.example.com", "x.api.example.com", false),
        ("*.example.com", "api.example.com", true),
        ("*.example.com", "a.b.example.com", true),
        ("*.example.com", "example.com", false),
        ("*.example.com", "badexample.com", false),
        ("127.0.0.1", "127.0.0.1", true),
    ]

    @Test("--passthrough patterns: exact names, and *.suffix for the names under it", arguments: patterns)
    func pattern(_ pattern: String, _ host: String, _ matches: Bool) throws {
        #expect(try HostPattern(parsing: pattern).matches(host) == matches)
    }

    static let badPatterns: [(text: String, error: HostPattern.ParseError)] = [
        ("", .empty),
        ("a.*.example.com", .misplacedWildcard("a.*.example.com")),
        ("*", .misplacedWildcard("*")),
        ("exa mple.com", .notAHostName("exa mple.com")),
    ]

    @Test("a pattern that is not a name or *.suffix is refused, in words", arguments: badPatterns)
    func badPattern(_ text: String, _ error: HostPattern.ParseError) {
        #expect(throws: error) { try HostPattern(parsing: text) }
    }

    /// How a device's failed handshake is read: only a certificate alert (or a completed handshake
    /// closed at once) counts as refusing the certificate.
    static let deviceFailures: [(error: TLSStreamError, failure: Failure, counts: Bool, alert: String?)] = [
        (
            TLSStreamError(kind: .refused, reason: "tlsv1 alert unknown ca", cause: .peerAlert(48)),
            .clientRejectedCertificate, true, "unknown_ca"
        ),
        (
            TLSStreamError(kind: .refused, reason: "sslv3 alert bad certificate", cause: .peerAlert(42)),
            .clientRejectedCertificate, true, "bad_certificate"
        ),
        (
            TLSStreamError(kind: .refused, reason: "sslv3 alert certificate unknown", cause: .peerAlert(46)),
            .clientRejectedCertificate, true, "certificate_unknown"
        ),
        (
            TLSStreamError(kind: .refused, reason: "sslv3 alert handshake failure", cause: .peerAlert(40)),
            .clientHandshakeFailed, false, "handshake_failure"
        ),
        (
            TLSStreamError(kind: .refused, reason: "tlsv1 alert decrypt error", cause: .peerAlert(51)),
            .clientHandshakeFailed, false, "decrypt_error"
        ),
        (
            TLSStreamError(kind: .refused, reason: "unsupported protocol", cause: .noSharedVersion),
            .clientTLSVersion, false, nil
        ),
        (
            TLSStreamError(kind: .refused, reason: "no shared cipher", cause: .noSharedCipher),
            .clientNoSharedCipher, false, nil
        ),
        (TLSStreamError(kind: .peerClosed, reason: "the client closed the connection"), .clientReset, false, nil),
        (TLSStreamError(kind: .refused, reason: "bad key share"), .clientHandshakeFailed, false, nil),
    ]

    @Test(
        "a device's failed handshake: its code, its alert, and whether it counts as refusing the certificate",
        arguments: deviceFailures)
    func deviceFailure(_ error: TLSStreamError, _ failure: Failure, _ counts: Bool, _ alert: String?) {
        let ending = DeviceHandshakeFailure(error)
        #expect(ending.failure == failure)
        #expect(ending.isCertificateRejection == counts)
        #expect(ending.alert == alert)
    }

    @Test("a completed handshake closed before any byte counts; a timeout or a reset does not")
    func otherEndings() {
        #expect(DeviceHandshakeFailure.closedAfterHandshake.isCertificateRejection)
        #expect(DeviceHandshakeFailure.closedAfterHandshake.failure == .clientRejectedCertificate)
        #expect(!DeviceHandshakeFailure.timedOut.isCertificateRejection)
        #expect(DeviceHandshakeFailure.timedOut.failure == .clientHandshakeTimeout)
        #expect(!DeviceHandshakeFailure.reset("Connection reset by peer").isCertificateRejection)
    }

    @Test("refusals are counted per device and host: one device's do not pass the host through for another")
    func perDevice() {
        let rejections = ClientRejections()
        let phone = ClientRejections.Pair(client: "10.0.0.5", host: "api.example.com")
        let tablet = ClientRejections.Pair(client: "10.0.0.6", host: "api.example.com")
        #expect(!rejections.record(phone, limit: 2))
        #expect(rejections.record(phone, limit: 2))
        #expect(rejections.passesThrough(phone, limit: 2))
        #expect(!rejections.passesThrough(tablet, limit: 2))
        #expect(rejections.passedThrough(limit: 2).map(\.pair) == [phone])
        #expect(rejections.clear(limit: 2) == 1)
        #expect(!rejections.passesThrough(phone, limit: 2))
    }

    static func record(logHeaders: [(name: String, value: String)]?) -> RequestRecord {
        var record = RequestRecord(
            startedAt: 1_795_000_000_000,
            connection: .init(
                connectionID: 17, client: "127.0.0.1:50312", host: "api.example.com", port: 443,
                serverNameIndication: "api.example.com", upstreamAddress: "203.0.113.7:443", verdict: nil,
                action: .allowed),
            reused: false)
        record.method = "GET"
        record.url = "https://api.example.com/v1/items?page=2"
        record.httpVersion = "HTTP/1.1"
        record.status = 200
        record.requestHeaders = logHeaders
        return record
    }

    @Test("a request line has the documented fields, in the documented order")
    func documentedFields() throws {
        let docs = try String(contentsOfFile: Self.repository + "/docs/request-log.md", encoding: .utf8)
        // The example line of the contract, between its ```json fences.
        let example = try #require(
            docs.components(separatedBy: "```json\n").dropFirst().first?.components(separatedBy: "```").first)
        let documented = try JSONValue(parsing: example.replacingOccurrences(of: "\n", with: ""))
        let written = try JSONValue(parsing: Self.record(logHeaders: nil).logLine)
        guard case .object(let expected) = documented, case .object(let actual) = written else {
            Issue.record("not objects")
            return
        }
        #expect(actual.map(\.0) == expected.map(\.0))
        // The writer's keys are LogRecord's RequestField cases, in order.
        #expect(actual.map(\.0) == RequestField.allCases.map(\.rawValue))
    }

    @Test("credentials and cookies are redacted unless --log-secrets")
    func redaction() {
        let fields: [(name: String, value: String)] = [
            ("Host", "a.test"), ("Authorization", "Bearer x"), ("cookie", "s=1"), ("Set-Cookie", "t=2"),
            ("Proxy-Authorization", "Basic y"), ("Accept", "*/*"),
        ]
        let redacted = RequestRecord.loggedHeaders(fields, logSecrets: false).map(\.value)
        #expect(redacted == ["a.test", "[redacted]", "[redacted]", "[redacted]", "[redacted]", "*/*"])
        #expect(RequestRecord.loggedHeaders(fields, logSecrets: true).map(\.value) == fields.map(\.value))
    }

    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
}

/// The loop's leaf source compares names without case, as host names are.
@Suite("Intercept mode's leaf source")
struct InterceptLeafSourceTests {
    @Test("Example.COM and example.com get one leaf; an IP literal with no SNI gets its own")
    func caseInsensitive() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "leaf-source-\(UUID().uuidString)"
        ).path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let authority = try CertificateAuthority.create(in: directory)
        let cache = LeafCache(minter: try LeafMinter(authority: authority))
        let now = Int64(Date().timeIntervalSince1970)
        let upper = try cache.credentials(serverName: "Example.COM", connectHost: "example.com", now: now)
        let lower = try cache.credentials(serverName: "example.com", connectHost: "example.com", now: now)
        #expect(upper.chain[0] === lower.chain[0])
        #expect(cache.mints == 1)
        _ = try cache.credentials(serverName: nil, connectHost: "192.0.2.7", now: now)
        #expect(cache.mints == 2)
    }
}
