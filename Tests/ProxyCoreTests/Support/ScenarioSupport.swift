import ATSPolicy
import Foundation
import ProxyCore
import TLSTestSupport
import Testing

/// One log line of the proxy, with the contract's fields typed.
struct LogLine: CustomStringConvertible {
    let fields: [String: Any]

    var action: String? { fields["action"] as? String }
    var compliant: Bool? { fields["compliant"] as? Bool }
    var violations: [String]? { fields["violations"] as? [String] }
    var method: String? { fields["method"] as? String }
    var host: String? { fields["host"] as? String }
    var nsurl: Int? { (fields["error"] as? [String: Any])?["nsurl"] as? Int }
    var ssl: Int? { (fields["error"] as? [String: Any])?["ssl"] as? Int }
    var hasError: Bool { fields["error"] is [String: Any] }
    var ruleKind: String? { (fields["rule"] as? [String: Any])?["kind"] as? String }
    /// The rule's key; nil when the key is JSON null (the plain defaults) or the rule is missing.
    var ruleKey: String? { (fields["rule"] as? [String: Any])?["key"] as? String }
    var tlsVersion: String? { (fields["tls"] as? [String: Any])?["version"] as? String }
    var cipher: String? { (fields["tls"] as? [String: Any])?["cipher"] as? String }
    var trust: String? { (fields["tls"] as? [String: Any])?["trust"] as? String }
    var certificateSubjects: [String] {
        let certificates = (fields["tls"] as? [String: Any])?["certificates"] as? [[String: Any]] ?? []
        return certificates.compactMap { $0["subject"] as? String }
    }
    var bytesDown: Int { fields["bytes_down"] as? Int ?? 0 }
    var upstreamError: String? { fields["upstream_error"] as? String }

    var description: String {
        guard let data = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys]) else {
            return "\(fields)"
        }
        return String(decoding: data, as: UTF8.self)
    }
}

/// The proxy's answer to a raw CONNECT: status and headers.
struct RawResponse: CustomStringConvertible {
    let status: Int?
    let headers: [String: String]
    let text: String

    init(_ bytes: [UInt8]) {
        text = String(decoding: bytes, as: UTF8.self)
        let head = text.components(separatedBy: "\r\n\r\n").first ?? ""
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.isEmpty ? "" : lines.removeFirst()
        let parts = statusLine.split(separator: " ")
        status = parts.count > 1 ? Int(parts[1]) : nil
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        self.headers = headers
    }

    func header(_ name: String) -> String? { headers[name.lowercased()] }

    var description: String { text }
}

extension TestProxy {
    /// Starts a proxy whose policy is read with `policySettings` (an OS profile, `local_networks`…)
    /// instead of the defaults.
    static func start(
        _ factory: CertificateFactory, policyXML: String, policySettings: PolicySettings,
        mode: EnforcementMode = .enforce
    ) throws -> TestProxy {
        let policy = try PolicyLoader.load(
            bytes: Array("<plist version=\"1.0\"><dict>\(policyXML)</dict></plist>".utf8), file: "p.plist",
            settings: policySettings)
        return try TestProxy.start(factory, policyXML: policyXML, mode: mode) { $0.policy = policy }
    }

    /// The log's lines once there are at least `count` (a session writes its line when it ends, which
    /// can be a moment after the client has its answer), or whatever is there after `timeout`.
    func waitForLogLines(_ count: Int, timeout: Duration = .seconds(10)) throws -> [LogLine] {
        var lines: [[String: Any]] = []
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        _ = eventually(timeout: seconds, interval: 0.02) {
            lines = (try? logLines()) ?? []
            return lines.count >= count
        }
        return lines.map(LogLine.init)
    }

    /// `CONNECT host:port` sent by hand, so the 403's headers can be read.
    func rawConnect(host: String, port: UInt16) -> RawResponse {
        RawResponse(
            exchangeRaw(
                port: self.port, Array("CONNECT \(host):\(port) HTTP/1.1\r\nHost: \(host):\(port)\r\n\r\n".utf8)))
    }
}

/// curl options that let curl itself speak TLS 1.0 and weak suites to the server behind the tunnel,
/// whatever Debian's system OpenSSL settings say: the proxy's verdict is under test, not curl's.
let weakTLSCurlOptions = ["--tlsv1.0", "--ciphers", "DEFAULT:@SECLEVEL=0"]

/// A root `root` and a compliant leaf `leaf` named both `localhost` and `127.0.0.1`.
func loopbackChain() throws -> CertificateFactory {
    try compliantChain(subjectAltNames: ["DNS:localhost", "IP:127.0.0.1"])
}

/// `local_networks` empty: 127.0.0.1 then counts as a public address (Apple: NSAllowsLocalNetworking;
/// docs/ats-rules.md, "The decisions", `local_networks`), the only way to reach a non-local host here, since the proxy
/// resolves CONNECT hosts itself and only `localhost` and IP literals resolve on every machine.
let loopbackIsPublic = PolicySettings(localNetworks: [])

/// Checks a blocked connection: curl saw the 403 (or, for a tunnel opened before its verdict, a
/// failed handshake), and the log line says blocked with `violations` and Apple's error.
func expectBlocked(
    _ curl: CommandResult, _ line: LogLine?, violations: [String], nsurl: Int, ssl: Int?,
    sourceLocation: Testing.SourceLocation = #_sourceLocation
) {
    guard let line else {
        Issue.record("no log line; curl said: \(curl.standardError)", sourceLocation: sourceLocation)
        return
    }
    // A wrong verdict is one issue with the whole line, not one per field.
    guard line.action == "blocked" else {
        Issue.record("expected a blocked connection, the proxy logged: \(line)", sourceLocation: sourceLocation)
        return
    }
    #expect(curl.status != 0, "curl got through: \(curl.standardOutput)", sourceLocation: sourceLocation)
    if line.fields["tunnel"] as? String == "tls" {
        // A host that accepts cleartext gets its tunnel before any verdict; its ClientHello is
        // judged then, and a refusal is a failed handshake, as on an iPhone.
        #expect(
            curl.standardError.contains("alert handshake failure"), "\(curl.standardError)",
            sourceLocation: sourceLocation)
    } else {
        #expect(
            curl.standardError.contains("CONNECT tunnel failed, response 403"), "\(curl.standardError)",
            sourceLocation: sourceLocation)
    }
    #expect(line.compliant == false, "\(line)", sourceLocation: sourceLocation)
    #expect(line.violations == violations, "\(line)", sourceLocation: sourceLocation)
    #expect(line.nsurl == nsurl, "\(line)", sourceLocation: sourceLocation)
    #expect(line.ssl == ssl, "\(line)", sourceLocation: sourceLocation)
}

/// Checks an allowed, compliant connection: curl got the page through the tunnel and the log line
/// says allowed with no violations.
func expectAllowed(
    _ curl: CommandResult, _ line: LogLine?, tlsVersion: String? = nil,
    sourceLocation: Testing.SourceLocation = #_sourceLocation
) {
    guard let line else {
        Issue.record("no log line; curl said: \(curl.standardError)", sourceLocation: sourceLocation)
        return
    }
    guard line.action == "allowed" else {
        Issue.record("expected an allowed connection, the proxy logged: \(line)", sourceLocation: sourceLocation)
        return
    }
    #expect(curl.status == 0, "\(curl.standardError)", sourceLocation: sourceLocation)
    #expect(curl.standardOutput.contains("s_server"), sourceLocation: sourceLocation)
    #expect(line.compliant == true, "\(line)", sourceLocation: sourceLocation)
    #expect(line.violations == [], "\(line)", sourceLocation: sourceLocation)
    #expect(!line.hasError, "\(line)", sourceLocation: sourceLocation)
    #expect(line.bytesDown > 0, "\(line)", sourceLocation: sourceLocation)
    if let tlsVersion { #expect(line.tlsVersion == tlsVersion, "\(line)", sourceLocation: sourceLocation) }
}
