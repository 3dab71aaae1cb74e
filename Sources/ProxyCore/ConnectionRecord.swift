public import ATSPolicy

/// What the proxy did with one connection or request: one JSON line in the log.
///
/// The field names are the log contract (issue 3): fields may be added, never renamed.
public struct ConnectionRecord: Sendable {
    public enum Action: String, Sendable {
        case allowed, blocked, failed
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
    public var verdict: Verdict?
    public var action: Action
    /// What the ATS-shaped (or, after it failed, the permissive) probe saw.
    public var probed: ObservedConnection?
    /// The version and suite the device itself negotiated, read from the tunnel's hellos.
    public var deviceVersion: TLSVersion?
    public var deviceCipher: CipherSuite?
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

    /// The log line (without its newline).
    public var json: JSONValue {
        let violations = verdict?.violations ?? []
        return .object([
            ("ts", .string(DateFormat.rfc3339(milliseconds: startedAt))),
            ("client", .string(client)),
            ("method", .string(method)),
            ("scheme", .string(scheme.rawValue)),
            ("host", .string(host)),
            ("port", .int(Int(port))),
            ("sni", .optional(serverNameIndication)),
            ("rule", verdict?.requirements.rule.json ?? .null),
            ("compliant", .bool(verdict?.isCompliant ?? false)),
            ("action", .string(action.rawValue)),
            ("violations", .strings(violations.map(\.kind.name))),
            ("error", verdict?.error?.json ?? .null),
            ("explanations", .strings(violations.map(\.explanation))),
            ("tls", probed.map(ConnectionRecord.tlsJSON) ?? .null),
            ("observed", observedJSON),
            ("upstream_error", .optional(upstreamError)),
            ("bytes_up", .int(bytesUp)),
            ("bytes_down", .int(bytesDown)),
            ("duration_ms", .int(durationMilliseconds)),
        ])
    }

    private var observedJSON: JSONValue {
        guard deviceVersion != nil || deviceCipher != nil else { return .null }
        return .object([
            ("version", .optional(deviceVersion?.plistName)),
            ("cipher", .optional(deviceCipher?.ianaName)),
        ])
    }

    static func tlsJSON(_ observed: ObservedConnection) -> JSONValue {
        .object([
            ("version", .optional(observed.tlsVersion?.plistName)),
            ("cipher", .optional(observed.cipherSuite?.ianaName)),
            ("trust", .string(trustName(observed.trust))),
            (
                "certificates",
                .array(
                    observed.chain.map { certificate in
                        .object([
                            ("subject", .string(certificate.subject)),
                            ("key_type", .string(certificate.keyType.rawValue)),
                            ("key_bits", .int(certificate.keyBits)),
                            ("sig_alg", .string(certificate.signatureAlgorithm)),
                            ("not_before", .string(DateFormat.rfc3339(certificate.notBefore))),
                            ("not_after", .string(DateFormat.rfc3339(certificate.notAfter))),
                        ])
                    })
            ),
        ])
    }

    static func trustName(_ trust: ChainTrust) -> String {
        switch trust {
        case .systemRoot: "system_root"
        case .userInstalledRoot: "user_installed_root"
        case .untrusted: "untrusted"
        }
    }
}
