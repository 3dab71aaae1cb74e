import ATSPolicy
import Foundation
import ProxyWire
import TextFormats
import TrafficReport

@testable import LiveView

/// The daemon's policy in the recorded days: report/current.plist.
func currentPolicy(settings: PolicySettings = .default) throws -> TransportSecurityPolicy {
    try PolicyLoader.load(bytes: Array(RecordedLines.currentPlist.utf8), file: "current.plist", settings: settings)
}

func context(
    settings: PolicySettings = .default, clientClass: ClientClass = .urlsession, policy: TransportSecurityPolicy? = nil
) -> LivePolicyContext {
    LivePolicyContext(
        policy: policy ?? TransportSecurityPolicy(settings: settings), settings: settings, clientClass: clientClass,
        description: "current.plist (sha256 0123)")
}

/// A site that ingested `lines`, in order, as the daemon hands them over.
func liveSite(_ lines: [String], context: LivePolicyContext = context(), limits: LiveTraffic.Limits = .init())
    -> LiveViewSite
{
    let site = LiveViewSite(context: context, limits: limits)
    for line in lines { site.ingest(line: Array((line + "\n").utf8)) }
    return site
}

/// What `atsproxyctl report` computes for the same lines: a LogCollection of them as one file.
func batchReport(_ lines: [String], context: LivePolicyContext) -> (report: TrafficReport, collection: LogCollection) {
    var collection = LogCollection()
    collection.add(LogFile(path: "atsproxy.log", contents: Array((lines.joined(separator: "\n") + "\n").utf8)))
    let report = TrafficReport(
        traffic: collection.hostTraffic, settings: context.settings, clientClass: context.clientClass,
        currentPolicy: context.policy)
    return (report, collection)
}

extension LiveViewSite {
    /// The response to `method target`, nil for an event stream.
    func response(_ target: String, method: String = "GET") -> LocalResponse? {
        let request = LocalRequest(
            method: method, pathAndQuery: target, client: "127.0.0.1", arrival: .web, listener: "127.0.0.1:8081")
        guard case .response(let response) = reply(to: request) else { return nil }
        return response
    }

    func page(_ target: String) -> String { response(target).map { String(decoding: $0.body, as: UTF8.self) } ?? "" }
}

/// The hosts a page's table lists, in order: the `/host?name=` links inside `<tbody id="hosts">`.
func listedHosts(_ page: String) -> [String] {
    guard let start = page.range(of: "<tbody id=\"hosts\">"),
        let end = page.range(of: "</tbody>", range: start.upperBound..<page.endIndex)
    else { return [] }
    return page[start.upperBound..<end.lowerBound].components(separatedBy: "<a href=\"/host?name=").dropFirst()
        .compactMap { part in
            part.split(separator: "\"", maxSplits: 1).first.map { LocalRequest.percentDecoded($0) }
        }
}

/// A connection line in the daemon's format with only what a test varies.
func connectionLine(
    _ host: String, id: Int? = nil, client: String = "192.168.1.23:50000", ts: String = "2026-11-24T15:00:00.000Z",
    action: String = "allowed", violations: [String] = [], explanations: [String] = [], upstreamError: String? = nil,
    group: (name: String, codepoint: Int64)? = nil
) -> String {
    let groupJSON: JSONValue =
        group.map { .object([("name", .string($0.name)), ("codepoint", .int($0.codepoint))]) } ?? .null
    return JSONValue.object([
        ("ts", .string(ts)), ("client", .string(client)), ("method", "CONNECT"), ("scheme", "https"),
        ("host", .string(host)),
        ("port", 443), ("sni", .null), ("rule", .object([("kind", "default"), ("key", .null)])),
        ("compliant", .bool(violations.isEmpty)), ("action", .string(action)), ("violations", .strings(violations)),
        ("error", .null), ("explanations", .strings(explanations)), ("sni_check", .null), ("tunnel", "tls"),
        ("tls", .object([("version", "TLSv1.3"), ("cipher", "TLS_AES_128_GCM_SHA256"), ("group", groupJSON)])),
        ("observed", .null),
        ("status", .null), ("upstream_error", .optional(upstreamError)), ("bytes_up", 10), ("bytes_down", 20),
        ("duration_ms", 5), ("kind", "connection"), ("connection_id", id.map { .int($0) } ?? .null),
    ]).serialized
}

/// A request line of intercept mode.
func requestLine(
    _ host: String, id: Int, url: String? = nil, statusText: String = "OK", ts: String = "2026-11-24T15:00:00.100Z"
) -> String {
    JSONValue.object([
        ("ts", .string(ts)), ("kind", "request"), ("connection_id", .int(id)), ("client", "192.168.1.23:50000"),
        ("host", .string(host)), ("port", 443), ("method", "GET"), ("url", .string(url ?? "https://\(host)/")),
        ("http_version", "HTTP/1.1"), ("status", 200), ("status_text", .string(statusText)),
        ("response_body_bytes", 512),
        ("send_ms", 0), ("ttfb_ms", 10), ("duration_ms", 12), ("compliant", true), ("action", "allowed"),
    ]).serialized
}
