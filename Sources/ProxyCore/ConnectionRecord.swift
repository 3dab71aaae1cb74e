public import ATSPolicy

/// What the proxy did with one connection or request: one JSON line in the log.
///
/// The field names are the log contract (issue 3): fields may be added, never renamed.
public struct ConnectionRecord: Sendable {
    public enum Action: String, Sendable {
        case allowed, blocked, failed
    }

    public enum TunnelProtocol: String, Sendable {
        case tls, cleartext
    }

    /// When the connection was accepted, in milliseconds since 1970 (UTC).
    public var startedAt: Int64
    /// The client's address and port, `127.0.0.1:50312`.
    public var client: String
    /// `CONNECT`, `GET`, …
    public var method: String
    public var scheme: URLScheme
    public var host: String
    public var port: UInt16
    /// The server name the device's ClientHello carried, when there was one.
    public var serverNameIndication: String?
    /// The policy's answer for the host, known before any verdict: logged as `rule` even when the
    /// upstream could not be reached.
    public var requirements: Requirements?
    /// The verdict for the request's host (CONNECT) or URL.
    public var verdict: Verdict?
    /// The verdict for the ClientHello's server name, when it named another host than the CONNECT.
    public var serverNameVerdict: Verdict?
    /// What the device sent through a CONNECT tunnel: TLS, or cleartext (judged by the `cleartext` rule).
    public var tunnelProtocol: TunnelProtocol?
    public var action: Action
    /// What the ATS-shaped (or, after it failed, the permissive) probe saw, as the log's `tls` value
    /// (built once per probe rather than once per connection); set with ``noteProbe(_:)``.
    private var probedJSON: JSONValue = .null
    /// The same, serialized once per probe (``ProbeReport/tlsLogBytes``): the biggest part of a log
    /// line, and the same for every connection that reuses the probe.
    private var probedBytes: [UInt8] = ConnectionRecord.nullBytes
    /// The version and suite the device itself negotiated, read from the tunnel's hellos.
    public var deviceVersion: TLSVersion?
    public var deviceCipher: CipherSuite?
    /// The origin's status code, for a forwarded plain-HTTP request.
    public var status: Int?
    /// Why the upstream could not be reached, when it could not.
    public var upstreamError: String?
    public var bytesUp: Int64 = 0
    public var bytesDown: Int64 = 0
    public var durationMilliseconds: Int64 = 0

    public init(
        startedAt: Int64, client: String, method: String, scheme: URLScheme, host: String, port: UInt16,
        action: Action
    ) {
        self.startedAt = startedAt
        self.client = client
        self.method = method
        self.scheme = scheme
        self.host = host
        self.port = port
        self.action = action
    }

    /// Records what the probe behind this connection's verdict saw.
    public mutating func noteProbe(_ report: ProbeReport) {
        probedJSON = report.tlsJSON
        probedBytes = report.tlsLogBytes
    }

    /// The verdicts that were reached, the request's host first.
    private var verdicts: [Verdict] { [verdict, serverNameVerdict].compactMap(\.self) }

    /// The verdict that decides what is logged as `rule` and `error`: the first non-compliant one.
    private var decidingVerdict: Verdict? { verdicts.first { !$0.isCompliant } ?? verdict }

    /// The log line (without its newline).
    public var json: JSONValue { .object(fields(tls: probedJSON)) }

    /// The log line as bytes, what is written: the same as `json.serializedBytes`, with the probe's
    /// `tls` value copied in already serialized rather than written again for every connection.
    public var logLine: [UInt8] {
        let fields = fields(tls: .null)
        let split = ConnectionRecord.tlsFieldIndex
        assert(fields[split].0 == "tls")
        // `{…before…}` and `{…after…}` joined around `"tls":…`: both halves hold fields.
        var line = JSONValue.object(Array(fields[..<split])).serializedBytes
        line.removeLast()
        line += ConnectionRecord.tlsFieldPrefix
        line += probedBytes
        line.append(UInt8(ascii: ","))
        line += JSONValue.object(Array(fields[(split + 1)...])).serializedBytes.dropFirst()
        return line
    }

    private static let nullBytes = Array("null".utf8)
    private static let tlsFieldPrefix = Array(",\"tls\":".utf8)
    /// Where `tls` is in ``fields(tls:)``.
    private static let tlsFieldIndex = 15

    /// The log contract's fields, in order.
    private func fields(tls: JSONValue) -> [(String, JSONValue)] {
        let violations = verdicts.flatMap(\.violations)
        let rule = (decidingVerdict?.requirements ?? requirements)?.rule
        return [
            ("ts", .string(DateFormat.rfc3339(milliseconds: startedAt))),
            ("client", .string(client)),
            ("method", .string(method)),
            ("scheme", .string(scheme.rawValue)),
            ("host", .string(host)),
            ("port", .int(Int(port))),
            ("sni", .optional(serverNameIndication)),
            ("rule", rule?.json ?? .null),
            ("compliant", .bool(!verdicts.isEmpty && verdicts.allSatisfy(\.isCompliant))),
            ("action", .string(action.rawValue)),
            ("violations", .strings(violations.map(\.kind.name))),
            ("error", decidingVerdict?.error?.json ?? .null),
            ("explanations", .strings(violations.map(\.explanation))),
            ("sni_check", serverNameVerdict.map(ConnectionRecord.serverNameJSON) ?? .null),
            ("tunnel", .optional(tunnelProtocol?.rawValue)),
            ("tls", tls),
            ("observed", observedJSON),
            ("status", status.map { .int($0) } ?? .null),
            ("upstream_error", .optional(upstreamError)),
            ("bytes_up", .int(bytesUp)),
            ("bytes_down", .int(bytesDown)),
            ("duration_ms", .int(durationMilliseconds)),
        ]
    }

    private var observedJSON: JSONValue {
        guard deviceVersion != nil || deviceCipher != nil else { return .null }
        return .object([
            ("version", .optional(deviceVersion?.plistName)),
            ("cipher", .optional(deviceCipher?.ianaName)),
        ])
    }

    static func serverNameJSON(_ verdict: Verdict) -> JSONValue {
        .object([
            ("host", .string(verdict.requirements.host.description)),
            ("rule", verdict.requirements.rule.json),
            ("compliant", .bool(verdict.isCompliant)),
            ("violations", .strings(verdict.violations.map(\.kind.name))),
        ])
    }

    static func tlsJSON(_ observed: ObservedConnection) -> JSONValue {
        .object([
            ("version", .optional(observed.tlsVersion?.plistName)),
            ("cipher", .optional(observed.cipherSuite?.ianaName)),
            ("trust", .string(observed.trust.name)),
            ("certificates", .array(observed.chain.map { .object($0.summaryFields) })),
        ])
    }
}
