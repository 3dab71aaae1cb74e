import ATSPolicy
import LogRecord
import TextFormats
import TrafficReport

extension RequestRecord {
    /// The record as ``LoggedRequest/init(json:)`` reads its line, made without writing and parsing
    /// JSON (the live view takes every request line); nil where that reader refuses the line (a
    /// request refused before its method and URL were read), so the caller hands over the line
    /// instead and the live view counts it as it always has. `RequestRecordLoggedTests` holds the
    /// two ways to the same value.
    package var loggedRequest: LoggedRequest? {
        guard !connection.host.isEmpty else { return nil }
        if kind == .request {
            guard let method, !method.isEmpty, let url, !url.isEmpty, let httpVersion, !httpVersion.isEmpty else {
                return nil
            }
        }
        var logged = LoggedRequest(
            kind: kind, milliseconds: startedAt, connectionID: Int64(connection.connectionID), host: connection.host)
        logged.client = connection.client
        logged.device = connection.device
        logged.port = Int(connection.port)
        logged.upstream = connection.upstreamAddress
        logged.method = method ?? ""
        logged.url = url ?? ""
        logged.httpVersion = httpVersion ?? ""
        logged.status = status
        logged.statusText = statusText
        logged.contentType = contentType
        logged.requestBodyBytes = requestBodyBytes
        logged.responseBodyBytes = responseBodyBytes
        logged.requestHeadBytes = requestHeadBytes
        logged.responseHeadBytes = responseHeadBytes
        logged.sendMilliseconds = sendMilliseconds
        logged.timeToFirstByte = timeToFirstByteMilliseconds
        logged.durationMilliseconds = durationMilliseconds
        logged.reused = reused
        let judged = connection.judged
        logged.compliant = .bool(connection.verdict?.isCompliant ?? false)
        logged.action = .string(connection.action.rawValue)
        logged.rule = judged.rule.value
        logged.violations = judged.violations.value
        logged.error = judged.error.value
        logged.tlsGroup = judged.tlsGroup.value
        logged.upstreamError = upstreamError
        logged.upgrade = upgrade
        logged.requestHeaders = requestHeaders?.map { LoggedRequest.Header(name: $0.name, value: $0.value) }
        logged.responseHeaders = responseHeaders?.map { LoggedRequest.Header(name: $0.name, value: $0.value) }
        logged.app = app
        return logged
    }
}
