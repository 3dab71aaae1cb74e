import ATSPolicy
import LogRecord
import TextFormats

/// One request line of intercept mode (`"kind":"request"` or `"tls_stream"`, the contract in
/// docs/request-log.md): what `har` turns into an entry and `report` counts per host.
///
/// Required: `ts` (RFC 3339), `connection_id` and `host`, and for a request `method`, `url`,
/// `http_version`, `send_ms` and `duration_ms`; without one of those the line cannot make a HAR
/// entry. Every other member may be null or absent and takes HAR's "unknown" (-1, "", []).
package struct LoggedRequest: Sendable, Equatable {

    /// A header as logged (`{"name","value"}`); the value may be `[redacted]`.
    package struct Header: Sendable, Equatable {
        package var name: String
        package var value: String

        package init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// `request` (an HTTP exchange) or `tls_stream` (bytes inside the TLS that were not HTTP: no
    /// method, URL or status).
    package var kind: RecordKind
    /// `ts` as logged, and as milliseconds since 1970.
    package var timestamp: String
    package var milliseconds: Int64
    package var connectionID: Int64
    package var client: String?
    package var host: String
    package var port: Int?
    package var upstream: String?
    package var method: String
    package var url: String
    package var httpVersion: String
    package var status: Int?
    package var statusText: String?
    package var contentType: String?
    /// -1 when not logged.
    package var requestBodyBytes: Int64
    package var responseBodyBytes: Int64
    package var requestHeadBytes: Int64
    package var responseHeadBytes: Int64
    package var sendMilliseconds: Int64
    package var timeToFirstByte: Int64?
    package var durationMilliseconds: Int64
    package var reused: Bool
    /// The connection's verdict, as logged (null when absent): `compliant`, `action`, `rule`,
    /// `violations`, `error`.
    package var compliant: JSONValue
    package var action: JSONValue
    package var rule: JSONValue
    package var violations: JSONValue
    package var error: JSONValue
    /// The connection's key-exchange group as logged (`tls_group`; null when absent or older).
    package var tlsGroup: JSONValue
    package var upstreamError: String?
    package var upgrade: String?
    /// nil when headers were not logged (no `--log-headers`).
    package var requestHeaders: [Header]?
    package var responseHeaders: [Header]?
    /// The app its User-Agent (or its CONNECT's) named (`app`); nil when none, or the line predates it.
    package var app: AppAgent?
    /// `device`: the WireGuard peer the client was; nil for other clients and older lines.
    package var device: String?

    /// The `kind` of a log line: `connection` when the member is absent (lines written before
    /// intercept mode have none), nil when it is not a string.
    package static func kind(of json: JSONValue) -> String? {
        guard let kind = json[RequestField.kind] else { return RecordKind.connection.rawValue }
        if kind.isNull { return RecordKind.connection.rawValue }
        return kind.stringValue
    }

    /// A request line made by the daemon from its own record, without writing and reading it back
    /// as JSON (the live view takes every line the proxy logs): `kind`, `ts` and the connection's
    /// id and host; every other member as HAR's "unknown", for the caller to set as the line has it.
    package init(kind: RecordKind, milliseconds: Int64, connectionID: Int64, host: String) {
        self.kind = kind
        self.milliseconds = milliseconds
        timestamp = DateFormat.rfc3339(milliseconds: milliseconds)
        self.connectionID = connectionID
        self.host = host
        method = ""
        url = ""
        httpVersion = ""
        requestBodyBytes = -1
        responseBodyBytes = -1
        requestHeadBytes = -1
        responseHeadBytes = -1
        sendMilliseconds = 0
        durationMilliseconds = 0
        reused = false
        compliant = .null
        action = .null
        rule = .null
        violations = .null
        error = .null
        tlsGroup = .null
    }

    package init(json: JSONValue) throws(LogRecordError) {
        let what = "request record"
        guard json.objectValue != nil else { throw LogRecordError("the line is not a JSON object", record: what) }
        let kindName = try Self.string(json, .kind, what)
        guard let kind = RecordKind(rawValue: kindName), kind.isRequest else {
            throw LogRecordError("\"kind\" is \"\(kindName)\", not request or tls_stream", record: what)
        }
        self.kind = kind
        timestamp = try Self.string(json, .ts, what)
        guard let milliseconds = Timestamp.milliseconds(rfc3339: timestamp) else {
            throw LogRecordError("\"ts\" is \"\(timestamp)\", not an RFC 3339 time", record: what)
        }
        self.milliseconds = milliseconds
        connectionID = try Self.integer(json, .connectionID, what)
        host = try Self.string(json, .host, what)
        client = try Self.optionalString(json, .client, what)
        port = try Self.optionalInteger(json, .port, what).map(Int.init)
        upstream = try Self.optionalString(json, .upstream, what)
        app = AppAgent(json: json[RequestField.app])
        device = json[RequestField.device]?.stringValue
        if kind == .request {
            method = try Self.string(json, .method, what)
            url = try Self.string(json, .url, what)
            httpVersion = try Self.string(json, .httpVersion, what)
            sendMilliseconds = try Self.integer(json, .sendMilliseconds, what)
            durationMilliseconds = try Self.integer(json, .durationMilliseconds, what)
        } else {
            method = try Self.optionalString(json, .method, what) ?? ""
            url = try Self.optionalString(json, .url, what) ?? ""
            httpVersion = try Self.optionalString(json, .httpVersion, what) ?? ""
            sendMilliseconds = try Self.optionalInteger(json, .sendMilliseconds, what) ?? 0
            durationMilliseconds = try Self.optionalInteger(json, .durationMilliseconds, what) ?? 0
        }
        status = try Self.optionalInteger(json, .status, what).map(Int.init)
        statusText = try Self.optionalString(json, .statusText, what)
        contentType = try Self.optionalString(json, .contentType, what)
        requestBodyBytes = try Self.optionalInteger(json, .requestBodyBytes, what) ?? -1
        responseBodyBytes = try Self.optionalInteger(json, .responseBodyBytes, what) ?? -1
        requestHeadBytes = try Self.optionalInteger(json, .requestHeadBytes, what) ?? -1
        responseHeadBytes = try Self.optionalInteger(json, .responseHeadBytes, what) ?? -1
        timeToFirstByte = try Self.optionalInteger(json, .timeToFirstByteMilliseconds, what)
        guard let reused = json[RequestField.reused].map({ $0.isNull ? false : $0.boolValue }) ?? false else {
            throw LogRecordError("\"\(RequestField.reused.rawValue)\" is not a boolean", record: what)
        }
        self.reused = reused
        compliant = json[RequestField.compliant] ?? .null
        action = json[RequestField.action] ?? .null
        rule = json[RequestField.rule] ?? .null
        violations = json[RequestField.violations] ?? .null
        error = json[RequestField.error] ?? .null
        tlsGroup = json[RequestField.tlsGroup] ?? .null
        upstreamError = try Self.optionalString(json, .upstreamError, what)
        upgrade = try Self.optionalString(json, .upgrade, what)
        requestHeaders = try Self.headers(json, .requestHeaders, what)
        responseHeaders = try Self.headers(json, .responseHeaders, what)
    }

    private static func string(_ json: JSONValue, _ field: RequestField, _ what: String) throws(LogRecordError)
        -> String
    {
        guard let value = json[field], !value.isNull else {
            throw LogRecordError("no \"\(field.rawValue)\" field", record: what)
        }
        guard let text = value.stringValue, !text.isEmpty else {
            throw LogRecordError("\"\(field.rawValue)\" is not a non-empty string", record: what)
        }
        return text
    }

    private static func integer(_ json: JSONValue, _ field: RequestField, _ what: String) throws(LogRecordError)
        -> Int64
    {
        guard let value = json[field], !value.isNull else {
            throw LogRecordError("no \"\(field.rawValue)\" field", record: what)
        }
        guard let number = value.intValue else {
            throw LogRecordError("\"\(field.rawValue)\" is not an integer", record: what)
        }
        return number
    }

    private static func optionalString(_ json: JSONValue, _ field: RequestField, _ what: String) throws(LogRecordError)
        -> String?
    {
        guard let value = json[field], !value.isNull else { return nil }
        guard let text = value.stringValue else {
            throw LogRecordError("\"\(field.rawValue)\" is not a string or null", record: what)
        }
        return text
    }

    private static func optionalInteger(_ json: JSONValue, _ field: RequestField, _ what: String) throws(LogRecordError)
        -> Int64?
    {
        guard let value = json[field], !value.isNull else { return nil }
        guard let number = value.intValue else {
            throw LogRecordError("\"\(field.rawValue)\" is not an integer or null", record: what)
        }
        return number
    }

    private static func headers(_ json: JSONValue, _ field: RequestField, _ what: String) throws(LogRecordError)
        -> [Header]?
    {
        guard let value = json[field], !value.isNull else { return nil }
        guard let items = value.arrayValue else {
            throw LogRecordError("\"\(field.rawValue)\" is not an array or null", record: what)
        }
        var headers: [Header] = []
        for item in items {
            guard let name = item[HeaderField.name]?.stringValue, let text = item[HeaderField.value]?.stringValue else {
                throw LogRecordError(
                    "\"\(field.rawValue)\" holds an entry without a string \"name\" and \"value\"", record: what)
            }
            headers.append(Header(name: name, value: text))
        }
        return headers
    }
}

/// RFC 3339 times as milliseconds since 1970 and back, without Foundation's formatters.
package enum Timestamp {
    /// `2026-11-24T15:04:05.123Z`, `2026-11-24T15:04:05Z`, `2026-11-24T16:04:05+01:00` (`t`, `z`
    /// and a space for `T` too); nil for anything else. Fractions beyond milliseconds are cut.
    package static func milliseconds(rfc3339 text: String) -> Int64? {
        let bytes = Array(text.utf8)
        func number(_ start: Int, _ count: Int) -> Int64? {
            guard start + count <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[start..<(start + count)] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int64(byte - 0x30)
            }
            return value
        }
        func at(_ index: Int, _ characters: String) -> Bool {
            index < bytes.count && characters.utf8.contains(bytes[index])
        }
        guard let year = number(0, 4), at(4, "-"), let month = number(5, 2), at(7, "-"), let day = number(8, 2),
            at(10, "Tt "), let hour = number(11, 2), at(13, ":"), let minute = number(14, 2), at(16, ":"),
            let second = number(17, 2), (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
            hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var fraction: Int64 = 0
        if at(index, ".") {
            index += 1
            var digits = 0
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                if digits < 3 { fraction = fraction * 10 + Int64(bytes[index] - 0x30) }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 3) { fraction *= 10 }
        }
        var offsetMinutes: Int64 = 0
        if at(index, "Zz") {
            index += 1
        } else if at(index, "+-"), let offsetHour = number(index + 1, 2), at(index + 3, ":"),
            let offsetMinute = number(index + 4, 2), offsetHour < 24, offsetMinute < 60
        {
            offsetMinutes = (offsetHour * 60 + offsetMinute) * (bytes[index] == UInt8(ascii: "-") ? -1 : 1)
            index += 6
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }
        let seconds = DateFormat.seconds(
            year: Int(year), month: Int(month), day: Int(day), hour: Int(hour), minute: Int(minute),
            second: Int(min(second, 59)))
        return (seconds - offsetMinutes * 60) * 1000 + fraction
    }

    /// `2026-11-24T15:04:05.123Z`: UTC with milliseconds, as HAR's `startedDateTime` wants ISO 8601
    /// (the log's own timestamp format).
    package static func iso8601(milliseconds: Int64) -> String { DateFormat.rfc3339(milliseconds: milliseconds) }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
