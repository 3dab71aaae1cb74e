import ATSPolicy
import Foundation
import TLSTestSupport
import Testing
import TextFormats
import TrafficReport

/// One log line in the daemon's format, with only the fields a test cares about set.
func logLine(
    _ host: String, scheme: String = "https", action: String = "allowed", version: String? = nil, cipher: String? = nil,
    violations: [String] = [], explanations: [String]? = nil, rule: String = "default", tunnel: String? = nil,
    sniCheck: (host: String, violations: [String], explanations: [String])? = nil, method: String? = nil
) -> String {
    let tls: JSONValue =
        version == nil && cipher == nil
        ? .null
        : .object([
            ("version", .optional(version)), ("cipher", .optional(cipher)), ("trust", "system_root"),
            ("certificates", .array([])),
        ])
    let check: JSONValue =
        sniCheck.map { check in
            .object([
                ("host", .string(check.host)), ("rule", .object([("kind", "default"), ("key", .null)])),
                ("compliant", .bool(check.violations.isEmpty)),
                ("violations", .strings(check.violations)),
            ])
        } ?? .null
    let allViolations = violations + (sniCheck?.violations ?? [])
    let allExplanations = (explanations ?? violations.map { "explained \($0)" }) + (sniCheck?.explanations ?? [])
    return JSONValue.object([
        ("ts", "2026-11-20T10:00:00.000Z"), ("client", "127.0.0.1:5000"),
        ("method", .string(method ?? (scheme == "http" ? "GET" : "CONNECT"))), ("scheme", .string(scheme)),
        ("host", .string(host)), ("port", .int(scheme == "http" ? 80 : 443)), ("sni", .null),
        ("rule", .object([("kind", .string(rule)), ("key", .null)])), ("compliant", .bool(allViolations.isEmpty)),
        ("action", .string(action)), ("violations", .strings(allViolations)), ("error", .null),
        ("explanations", .strings(allExplanations)), ("sni_check", check), ("tunnel", .optional(tunnel)), ("tls", tls),
        ("observed", .null), ("status", .null), ("upstream_error", .null), ("bytes_up", 0), ("bytes_down", 0),
        ("duration_ms", 1),
    ]).serialized
}

/// The report for these log lines, as one file.
func report(_ lines: [String], settings: PolicySettings = .default, policy: TransportSecurityPolicy? = nil)
    -> TrafficReport
{
    var collection = LogCollection()
    collection.add(LogFile(path: "test.log", contents: Array((lines.joined(separator: "\n") + "\n").utf8)))
    return TrafficReport(traffic: collection.hostTraffic, settings: settings, currentPolicy: policy)
}

extension TrafficReport {
    func assessment(_ host: String) -> HostAssessment? { assessments.first { $0.host.description == host } }

    /// The suggestion as `domain: summary` lines, for short exact comparisons.
    var entrySummaries: [String] { entries.map { "\($0.domain): \($0.exception.summary)" } }
}

/// A policy from the inner XML of an NSAppTransportSecurity dictionary.
func policy(_ innerXML: String, settings: PolicySettings = .default) throws -> TransportSecurityPolicy {
    let document =
        "<plist version=\"1.0\"><dict><key>NSAppTransportSecurity</key><dict>\(innerXML)</dict></dict></plist>"
    return try PolicyLoader.load(bytes: Array(document.utf8), file: "test.plist", settings: settings)
}

/// gzip of `text`, made by the gzip program (not by the code under test).
func gzipped(_ text: String) throws -> [UInt8] {
    let directory = FileManager.default.temporaryDirectory.path + "/report-gzip-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let file = directory + "/log"
    try text.write(toFile: file, atomically: true, encoding: .utf8)
    let result = try runCommand("/usr/bin/gzip", ["-n", file])
    #expect(result.status == 0, "gzip: \(result.standardError)")
    return [UInt8](try Data(contentsOf: URL(fileURLWithPath: file + ".gz")))
}

let ecdheCBC = "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"
let ecdheGCM = "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
let rsaGCM = "TLS_RSA_WITH_AES_128_GCM_SHA256"
let tls13 = "TLS_AES_128_GCM_SHA256"
