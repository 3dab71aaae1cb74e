import TextFormats

import ATSPolicy

/// One HTTP request inside an intercepted connection: one JSON line in the log, beside its
/// connection's line (docs/request-log.md is the contract; fields may be added, never renamed).
package struct RequestRecord: Sendable {
    package enum Kind: String, Sendable {
        case request
        /// Bytes inside the TLS that were not HTTP, relayed as they came.
        case tlsStream = "tls_stream"
    }

    /// What the request's connection line says, repeated so that each line stands alone.
    package struct ConnectionFacts: Sendable {
        package var connectionID: UInt64
        package var client: String
        package var host: String
        package var port: UInt16
        package var serverNameIndication: String?
        package var upstreamAddress: String?
        package var verdict: Verdict?
        package var action: ConnectionRecord.Action
    }

    package var kind = Kind.request
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
    /// The protocol switched to after a 101.
    package var upgrade: String?
    /// Logged only with `--log-headers` (nil otherwise), secrets already redacted.
    package var requestHeaders: [(name: String, value: String)]?
    package var responseHeaders: [(name: String, value: String)]?

    package init(startedAt: Int64, connection: ConnectionFacts, reused: Bool) {
        self.startedAt = startedAt
        self.connection = connection
        self.reused = reused
    }

    /// The field names whose values are credentials: `"[redacted]"` unless `--log-secrets`.
    static let secretFields: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie"]

    /// `fields` as logged: secrets redacted unless `logSecrets`.
    static func loggedHeaders(_ fields: [(name: String, value: String)], logSecrets: Bool) -> [(name: String, value: String)] {
        guard !logSecrets else { return fields }
        return fields.map { secretFields.contains($0.name.lowercased()) ? ($0.name, "[redacted]") : $0 }
    }

    /// The line, without its newline.
    package var logLine: [UInt8] {
        var writer = JSONObjectWriter(reservingCapacity: 768)
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
        let verdict = connection.verdict
        sink.add("ts", string: DateFormat.rfc3339(milliseconds: startedAt))
        sink.add("kind", string: kind.rawValue)
        sink.add("connection_id", int: Int64(connection.connectionID))
        sink.add("client", string: connection.client)
        sink.add("host", string: connection.host)
        sink.add("port", int: Int64(connection.port))
        sink.add("sni", string: connection.serverNameIndication)
        sink.add("upstream", string: connection.upstreamAddress)
        sink.add("method", string: method)
        sink.add("url", string: url)
        sink.add("http_version", string: httpVersion)
        sink.add("status", status.map { .int($0) })
        sink.add("status_text", string: statusText)
        sink.add("content_type", string: contentType)
        sink.add("request_body_bytes", int: requestBodyBytes)
        sink.add("response_body_bytes", int: responseBodyBytes)
        sink.add("request_head_bytes", int: requestHeadBytes)
        sink.add("response_head_bytes", int: responseHeadBytes)
        sink.add("send_ms", int: sendMilliseconds)
        sink.add("ttfb_ms", timeToFirstByteMilliseconds.map { .int($0) })
        sink.add("duration_ms", int: durationMilliseconds)
        sink.add("reused", bool: reused)
        sink.add("compliant", bool: verdict?.isCompliant ?? false)
        sink.add("action", string: connection.action.rawValue)
        sink.add("rule", object: verdict?.requirements.rule)
        sink.add("violations", strings: verdict?.violations.map(\.kind.name) ?? [])
        sink.add("error", object: verdict?.error)
        sink.add("upstream_error", string: upstreamError)
        sink.add("upgrade", string: upgrade)
        sink.add("request_headers", requestHeaders.map(Self.headersJSON))
        sink.add("response_headers", responseHeaders.map(Self.headersJSON))
    }

    private static func headersJSON(_ fields: [(name: String, value: String)]) -> JSONValue {
        .array(fields.map { .object([("name", .string($0.name)), ("value", .string($0.value))]) })
    }
}
