import Foundation
import Testing

@testable import LiveView

/// The hosts table's verdict cell says what happened to the app's loads and why: the violations,
/// the failure, why loads were passed through unread, and, in intercept mode, why a host with
/// connections shows no request.
@Suite("The live view's verdict cell")
struct HostVerdictTextTests {
    /// `line` with extra members before its `kind` (the writer's order does not matter to readers).
    static func with(_ line: String, _ members: String) -> String {
        line.replacingOccurrences(of: #""kind":"connection""#, with: members + #","kind":"connection""#)
    }

    /// A host with an intercepted request, so the lines are intercept mode's.
    static let interceptedElsewhere = [
        requestLine("seen.example.com", id: 90), connectionLine("seen.example.com", id: 90),
    ]

    static let rows: [(name: String, lines: [String], host: String, verdict: HostVerdict, text: String)] = [
        (
            "blocked, with its violations",
            [connectionLine("old.example.com", action: "blocked", violations: ["tls_version"])],
            "old.example.com", .blocked, "blocked: tls_version"
        ),
        (
            "failed, with the failure's code and words",
            [
                with(
                    connectionLine(
                        "refused.example.com", action: "failed",
                        upstreamError: "the device refused the proxy's certificate (unknown_ca)"),
                    #""failure":"client_rejected_certificate""#)
            ],
            "refused.example.com", .failed,
            "failed: client_rejected_certificate: the device refused the proxy's certificate (unknown_ca)"
        ),
        (
            "every load passed through: why, and why no request was seen",
            interceptedElsewhere + [with(connectionLine("pinned.example.com", id: 1), #""passthrough":"pinned""#)],
            "pinned.example.com", .passedThrough,
            "passed through: the app pins it (NSPinnedDomains): a minted certificate would fail (1); "
                + "no request seen: its connections were passed through"
        ),
        (
            "allowed, some loads passed through after a device refused the certificate",
            [
                requestLine("mixed.example.com", id: 2), connectionLine("mixed.example.com", id: 2),
                connectionLine("mixed.example.com", id: 3),
                with(connectionLine("mixed.example.com", id: 4), #""passthrough":"client_rejected_before""#),
            ],
            "mixed.example.com", .allowed,
            "allowed: passed through unread: a device refused the proxy's certificate (atsproxyctl passthrough list) (1)"
        ),
        (
            "intercepted, bytes that were not HTTP",
            interceptedElsewhere + [
                tlsStreamLine("stream.example.com", id: 5), connectionLine("stream.example.com", id: 5),
            ],
            "stream.example.com", .allowed,
            "allowed: no request seen: the bytes inside its TLS were not HTTP (tls_stream)"
        ),
        (
            "intercepted, no request sent",
            interceptedElsewhere + [connectionLine("quiet.example.com", id: 6)],
            "quiet.example.com", .allowed, "allowed: no request seen: the device sent none on its connections"
        ),
        (
            "tunnel mode: no request lines anywhere, so none is missed",
            [connectionLine("tunnel.example.com", id: 7)], "tunnel.example.com", .allowed, "allowed"
        ),
    ]

    @Test("each kind of host says what happened and why", arguments: rows.indices)
    func verdictText(_ index: Int) throws {
        let row = Self.rows[index]
        let site = liveSite(row.lines)
        let shown = try #require(site.snapshot.rows.first { $0.name == row.host }, "\(row.name)")
        #expect(shown.verdict == row.verdict, "\(row.name)")
        #expect(shown.verdictText == row.text, "\(row.name)")
    }
}

/// A `tls_stream` line of intercept mode: bytes inside the TLS that were not HTTP.
func tlsStreamLine(_ host: String, id: Int) -> String {
    requestLine(host, id: id).replacingOccurrences(of: #""kind":"request""#, with: #""kind":"tls_stream""#)
}
