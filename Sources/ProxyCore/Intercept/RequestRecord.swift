import ATSPolicy
import EventLoop
import LogRecord
import TextFormats

/// One HTTP request inside an intercepted connection: one JSON line in the log, beside its
/// connection's line (docs/request-log.md is the contract, LogRecord's ``RequestField`` its field
/// names; fields may be added, never renamed).
package struct RequestRecord: Sendable {

    /// What the request's connection line says, repeated so that each line stands alone.
    package struct ConnectionFacts: Sendable {
        package var connectionID: UInt64
        package var client: String
        package var host: String
        package var port: UInt16
        package var serverNameIndication: String?
        package var upstreamAddress: String?
        package var verdict: Verdict? { didSet { judged = JudgedFields(verdict: verdict, group: keyExchangeGroup) } }
        package var action: Action
        /// The key-exchange group of the handshake the verdict was judged on (`tls_group`).
        package var keyExchangeGroup: KeyExchangeGroup? {
            didSet { judged = JudgedFields(verdict: verdict, group: keyExchangeGroup) }
        }
        /// The app the CONNECT's User-Agent named: a request's line names it when the request names none.
        package var app: AppAgent?
        /// The WireGuard peer the client is (the connection line's `device`).
        package var device: String?
        /// ``verdict`` and ``keyExchangeGroup`` as every request line writes them, made when they are set.
        private(set) var judged: JudgedFields

        package init(
            connectionID: UInt64, client: String, host: String, port: UInt16, serverNameIndication: String? = nil,
            upstreamAddress: String? = nil, verdict: Verdict? = nil, action: Action,
            keyExchangeGroup: KeyExchangeGroup? = nil, app: AppAgent? = nil, device: String? = nil
        ) {
            self.connectionID = connectionID
            self.client = client
            self.host = host
            self.port = port
            self.serverNameIndication = serverNameIndication
            self.upstreamAddress = upstreamAddress
            self.verdict = verdict
            self.action = action
            self.keyExchangeGroup = keyExchangeGroup
            self.app = app
            self.device = device
            judged = JudgedFields(verdict: verdict, group: keyExchangeGroup)
        }
    }

    /// A connection's `rule`, `violations`, `error` and `tls_group` as JSON values (the live view's
    /// records) and as their bytes (the log line): the same for each of its requests, so made once
    /// per connection rather than once per request, as HTTP/2's many streams per connection made
    /// worth it (4% of the proxy's CPU per stream, and a fifth of the JSON values it built).
    final class JudgedFields: Sendable {
        /// A value and its compact bytes (`value.serializedBytes`).
        struct Serialized: Sendable {
            let value: JSONValue
            let bytes: [UInt8]

            init(_ value: JSONValue) {
                self.value = value
                bytes = value.serializedBytes
            }
        }

        let rule: Serialized
        let violations: Serialized
        let error: Serialized
        let tlsGroup: Serialized

        init(verdict: Verdict?, group: KeyExchangeGroup?) {
            rule = Serialized(verdict?.requirements.rule.json ?? .null)
            violations = Serialized(.strings(verdict?.violations.map(\.kind.name) ?? []))
            error = Serialized(verdict?.error?.json ?? .null)
            tlsGroup = Serialized(group?.json ?? .null)
        }
    }

    /// `request`, or `tls_stream` for bytes inside the TLS that were not HTTP.
    package var kind = RecordKind.request
    /// When the request's first byte arrived, in milliseconds since 1970 (UTC).
    package var startedAt: Int64
    package var connection: ConnectionFacts
    package var method: String?
    package var url: String?
    package var httpVersion: String?
    package var status: Int?
    package var statusText: String?
    package var contentType: String?
    package var requestBodyBytes: Int64 = 0
    package var responseBodyBytes: Int64 = 0
    package var requestHeadBytes: Int64 = -1
    package var responseHeadBytes: Int64 = -1
    /// Milliseconds from ``startedAt`` until the whole request was sent upstream.
    package var sendMilliseconds: Int64 = 0
    /// Milliseconds from ``startedAt`` until the response head's first byte; nil without one.
    package var timeToFirstByteMilliseconds: Int64?
    package var durationMilliseconds: Int64 = 0
    /// Whether an earlier request used the same connection.
    package var reused: Bool
    package var upstreamError: String?
    /// Why, as ``Failure``'s code (`failure`), when the proxy has one for `upstreamError`.
    package var failure: Failure?
    /// The protocol switched to after a 101.
    package var upgrade: String?
    /// The HTTP/2 stream's id on the device's connection; nil for HTTP/1.x.
    package var streamID: Int32?
    /// gRPC's `grpc-status` and `grpc-message`, from the response's trailers.
    package var grpcStatus: Int?
    package var grpcMessage: String?
    /// Logged only with `--log-headers` (nil otherwise), secrets already redacted.
    package var requestHeaders: [(name: String, value: String)]?
    package var responseHeaders: [(name: String, value: String)]?
    /// The app the request's own User-Agent names (``noteUserAgent(_:)``).
    package private(set) var requestApp: AppAgent?

    /// The line's `app`: the request's own, else the CONNECT's.
    package var app: AppAgent? { requestApp ?? connection.app }

    /// Takes the request's `User-Agent` value (nil when it sent none).
    package mutating func noteUserAgent(_ value: String?) {
        var memo = AppAgentMemo()
        noteUserAgent(value, memo: &memo)
    }

    /// Takes the request's `User-Agent` value through its connection's memo of the last one parsed.
    package mutating func noteUserAgent(_ value: String?, memo: inout AppAgentMemo) {
        requestApp = memo.agent(userAgent: value)
    }

    package init(startedAt: Int64, connection: ConnectionFacts, reused: Bool) {
        self.startedAt = startedAt
        self.connection = connection
        self.reused = reused
    }

    /// The field names whose values are credentials: `"[redacted]"` unless `--log-secrets`.
    static let secretFields: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie"]

    /// `fields` as logged: secrets redacted unless `logSecrets`.
    static func loggedHeaders(_ fields: [(name: String, value: String)], logSecrets: Bool) -> [(
        name: String, value: String
    )] {
        guard !logSecrets else { return fields }
        return fields.map { secretFields.contains($0.name.lowercased()) ? ($0.name, "[redacted]") : $0 }
    }

    /// The line, without its newline.
    package var logLine: [UInt8] {
        // A request line without its headers is 1.0–1.3 KB: one allocation, not a copy into a second.
        var writer = JSONObjectWriter(reservingCapacity: 1536)
        write(to: &writer)
        return writer.finish()
    }

    /// The line as a value.
    package var json: JSONValue {
        var builder = JSONObjectBuilder()
        write(to: &builder)
        return builder.value
    }

    private func write(to sink: inout some JSONObjectSink) {
        typealias Field = RequestField
        let verdict = connection.verdict
        sink.add(Field.ts, string: DateFormat.rfc3339(milliseconds: startedAt))
        sink.add(Field.kind, string: kind.rawValue)
        sink.add(Field.connectionID, int: Int64(connection.connectionID))
        sink.add(Field.client, string: connection.client)
        sink.add(Field.host, string: connection.host)
        sink.add(Field.port, int: Int64(connection.port))
        sink.add(Field.sni, string: connection.serverNameIndication)
        sink.add(Field.upstream, string: connection.upstreamAddress)
        sink.add(Field.method, string: method)
        sink.add(Field.url, string: url)
        sink.add(Field.httpVersion, string: httpVersion)
        sink.add(Field.status, status.map { .int($0) })
        sink.add(Field.statusText, string: statusText)
        sink.add(Field.contentType, string: contentType)
        sink.add(Field.requestBodyBytes, int: requestBodyBytes)
        sink.add(Field.responseBodyBytes, int: responseBodyBytes)
        sink.add(Field.requestHeadBytes, int: requestHeadBytes)
        sink.add(Field.responseHeadBytes, int: responseHeadBytes)
        sink.add(Field.sendMilliseconds, int: sendMilliseconds)
        sink.add(Field.timeToFirstByteMilliseconds, timeToFirstByteMilliseconds.map { .int($0) })
        sink.add(Field.durationMilliseconds, int: durationMilliseconds)
        sink.add(Field.reused, bool: reused)
        sink.add(Field.compliant, bool: verdict?.isCompliant ?? false)
        sink.add(Field.action, string: connection.action.rawValue)
        let judged = connection.judged
        sink.add(Field.rule, value: judged.rule.value, serializedAs: judged.rule.bytes)
        sink.add(Field.violations, value: judged.violations.value, serializedAs: judged.violations.bytes)
        sink.add(Field.error, value: judged.error.value, serializedAs: judged.error.bytes)
        sink.add(Field.upstreamError, string: upstreamError)
        sink.add(Field.upgrade, string: upgrade)
        sink.add(Field.requestHeaders, requestHeaders.map(Self.headersJSON))
        sink.add(Field.responseHeaders, responseHeaders.map(Self.headersJSON))
        sink.add(Field.tlsGroup, value: judged.tlsGroup.value, serializedAs: judged.tlsGroup.bytes)
        sink.add(Field.failure, string: failure?.rawValue)
        sink.add(Field.streamID, streamID.map { .int(Int64($0)) })
        sink.add(Field.grpcStatus, grpcStatus.map { .int(Int64($0)) })
        sink.add(Field.grpcMessage, string: grpcMessage)
        sink.add(Field.app, object: app)
        sink.add(Field.device, string: connection.device)
    }

    private static func headersJSON(_ fields: [(name: String, value: String)]) -> JSONValue {
        .array(
            fields.map {
                .object([
                    (HeaderField.name.rawValue, .string($0.name)), (HeaderField.value.rawValue, .string($0.value)),
                ])
            })
    }
}

extension ConnectTunnel {
    /// What each request line of this intercepted connection repeats of the connection's.
    func requestFacts(upstream address: SocketAddress?) -> RequestRecord.ConnectionFacts {
        RequestRecord.ConnectionFacts(
            connectionID: owner.id, client: owner.peer, host: host, port: port,
            serverNameIndication: findings.serverNameIndication, upstreamAddress: address?.description,
            verdict: findings.serverNameVerdict ?? findings.verdict, action: findings.action ?? .allowed,
            keyExchangeGroup: findings.probe?.observed?.keyExchangeGroup, app: connectApp, device: owner.device)
    }
}
