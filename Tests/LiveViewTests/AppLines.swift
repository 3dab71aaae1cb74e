import ATSPolicy
import Foundation
import LogRecord
import TextFormats

/// What a test's host needs: nothing, `NSExceptionMinimumTLSVersion` (a TLS 1.0 server), or
/// `NSExceptionAllowsInsecureHTTPLoads` (an `http://` load).
enum HostNeed {
    case nothing, tls10, cleartext
}

/// A connection line as the daemon writes it for a load with `userAgent` (no `app` without one).
func appLine(
    _ host: String, userAgent: String?, client: String, need: HostNeed = .nothing,
    ts: String = "2026-11-24T15:00:00.000Z"
) -> String {
    let app: JSONValue = userAgent.flatMap { AppAgent(userAgent: $0) }.map(appJSON) ?? .null
    let (version, cipher) =
        need == .tls10 ? ("TLSv1.0", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA") : ("TLSv1.3", "TLS_AES_128_GCM_SHA256")
    let violations: [String] =
        switch need {
        case .nothing: []
        case .tls10: ["tls_version"]
        case .cleartext: ["cleartext"]
        }
    let tls: JSONValue =
        need == .cleartext ? .null : .object([("version", .string(version)), ("cipher", .string(cipher))])
    return JSONValue.object([
        ("ts", .string(ts)), ("client", .string(client)), ("method", need == .cleartext ? "GET" : "CONNECT"),
        ("scheme", need == .cleartext ? "http" : "https"), ("host", .string(host)),
        ("port", need == .cleartext ? 80 : 443),
        ("sni", .null), ("rule", .object([("kind", "default"), ("key", .null)])),
        ("compliant", .bool(violations.isEmpty)),
        ("action", violations.isEmpty ? "allowed" : "blocked"), ("violations", .strings(violations)), ("error", .null),
        ("explanations", .strings(violations.map { "\($0) on \(host)" })), ("sni_check", .null),
        ("tunnel", need == .cleartext ? .null : "tls"), ("tls", tls), ("observed", .null), ("status", .null),
        ("upstream_error", .null), ("bytes_up", 10), ("bytes_down", 20), ("duration_ms", 5), ("kind", "connection"),
        ("app", app),
    ]).serialized
}

/// The `app` object the daemon logs for an agent.
func appJSON(_ agent: AppAgent) -> JSONValue {
    let release: AppRelease? = if case .app(let release) = agent { release } else { nil }
    return .object([
        ("kind", release == nil ? "other" : "app"), ("name", .optional(release?.name)),
        ("version", .optional(release?.version)), ("cfnetwork", .optional(release?.cfNetwork)),
        ("darwin", .optional(release?.darwin)), ("ios", .optional(release?.iOS)),
        ("user_agent", .string(agent.userAgent)),
    ])
}

/// Two apps, a browser and a load without a User-Agent, on hosts that need different exceptions,
/// from two devices.
enum AppTraffic {
    static let myApp = "MyApp/1.4.2 CFNetwork/1568.100.1 Darwin/24.0.0"
    static let otherApp = "Other%20App/7 CFNetwork/1568.100.1 Darwin/24.0.0"
    static let browser =
        "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1"
    static let phone = "192.168.1.23:50000"
    static let tablet = "192.168.1.40:50000"

    /// The hosts that need an exception, one per (agent, device).
    static let exceptionHosts = ["legacy.example.com", "plain.example.org", "old.example.net", "bare.example.info"]

    static let lines = [
        appLine("api.myapp.test", userAgent: myApp, client: phone, ts: "2026-11-24T15:00:01.000Z"),
        appLine("legacy.example.com", userAgent: myApp, client: phone, need: .tls10, ts: "2026-11-24T15:00:02.000Z"),
        appLine(
            "plain.example.org", userAgent: browser, client: tablet, need: .cleartext, ts: "2026-11-24T15:00:03.000Z"),
        // The browser on a host MyApp uses too: listed under both.
        appLine("api.myapp.test", userAgent: browser, client: tablet, ts: "2026-11-24T15:00:04.000Z"),
        appLine("old.example.net", userAgent: otherApp, client: tablet, need: .tls10, ts: "2026-11-24T15:00:05.000Z"),
        appLine("bare.example.info", userAgent: nil, client: phone, need: .tls10, ts: "2026-11-24T15:00:06.000Z"),
    ]
}
