import ATSPolicy
import LogRecord
import TextFormats

/// Request lines turned into a HAR 1.2 document (`atsproxyctl har`): one entry per request, one
/// page per intercepted connection, the connection's ATS verdict and the request's app on every
/// entry as `_ats`.
///
/// What the log does not record, HAR's "unknown" stands for: `blocked`, `dns`, `connect` and `ssl`
/// are -1 (the upstream TLS was set up at the CONNECT, before any request), a size not logged is -1.
package enum HTTPArchive {
    /// The HAR document for `requests` (`tls_stream` lines are left out), entries sorted by start.
    package static func document(requests: [LoggedRequest], creatorVersion: String) -> JSONValue {
        let exchanges = requests.enumerated().filter { $0.element.kind == .request }
            // Stable: equal times keep the order the lines were read in.
            .sorted { ($0.element.milliseconds, $0.offset) < ($1.element.milliseconds, $1.offset) }
            .map(\.element)
        let pages = Pages(exchanges)
        return .object([
            (
                "log",
                .object([
                    ("version", "1.2"),
                    ("creator", .object([("name", "atsproxy"), ("version", .string(creatorVersion))])),
                    ("pages", .array(pages.list.map(pageJSON))),
                    ("entries", .array(exchanges.map { entry($0, pageref: pages.id(of: $0)) })),
                ])
            )
        ])
    }

    /// One page per connection. The daemon numbers connections per run, so a number seen again
    /// with another client or host (a restart between two logs) gets its own page, `connection-N-2`.
    struct Pages {
        struct Key: Hashable {
            var connectionID: Int64
            var client: String?
            var host: String
            var port: Int?

            init(_ request: LoggedRequest) {
                connectionID = request.connectionID
                client = request.client
                host = request.host
                port = request.port
            }
        }

        struct Page {
            var id: String
            var first: LoggedRequest
        }

        private(set) var list: [Page] = []
        private var index: [Key: Int] = [:]

        /// `requests` sorted by time: a page starts with its first request.
        init(_ requests: [LoggedRequest]) {
            var uses: [Int64: Int] = [:]
            for request in requests {
                let key = Key(request)
                guard index[key] == nil else { continue }
                let use = uses[request.connectionID, default: 0] + 1
                uses[request.connectionID] = use
                let id = "connection-\(request.connectionID)" + (use > 1 ? "-\(use)" : "")
                index[key] = list.count
                list.append(Page(id: id, first: request))
            }
        }

        func id(of request: LoggedRequest) -> String { index[Key(request)].map { list[$0].id } ?? "" }
    }

    private static func pageJSON(_ page: Pages.Page) -> JSONValue {
        let request = page.first
        let host = request.host.contains(":") ? "[\(request.host)]" : request.host
        let port = request.port.map { ":\($0)" } ?? ""
        return .object([
            ("startedDateTime", .string(Timestamp.iso8601(milliseconds: request.milliseconds))),
            ("id", .string(page.id)),
            ("title", .string("https://\(host)\(port) (client \(request.client ?? "unknown"))")),
            ("pageTimings", .object([("onContentLoad", -1), ("onLoad", -1)])),
        ])
    }

    /// The entry's `timings`: send, wait and receive never negative, whatever the log says.
    package struct Timings: Sendable, Equatable {
        package var send: Int64
        package var wait: Int64
        package var receive: Int64

        package init(_ request: LoggedRequest) {
            send = max(0, request.sendMilliseconds)
            if let firstByte = request.timeToFirstByte {
                wait = max(0, firstByte - request.sendMilliseconds)
                receive = max(0, request.durationMilliseconds - firstByte)
            } else {
                // No response: waiting until the exchange ended, nothing received.
                wait = max(0, request.durationMilliseconds - send)
                receive = 0
            }
        }

        /// HAR's `time`: the sum of the timings that are not -1 (blocked, dns, connect, ssl are).
        package var total: Int64 { send + wait + receive }
    }

    static func entry(_ request: LoggedRequest, pageref: String) -> JSONValue {
        let timings = Timings(request)
        let answered = request.status != nil
        var fields: [(String, JSONValue)] = [
            ("pageref", .string(pageref)),
            ("startedDateTime", .string(Timestamp.iso8601(milliseconds: request.milliseconds))),
            ("time", .int(timings.total)),
            (
                "request",
                .object([
                    ("method", .string(request.method)),
                    ("url", .string(withoutFragment(request.url))),
                    ("httpVersion", .string(request.httpVersion)),
                    ("cookies", .array(requestCookies(request.requestHeaders))),
                    ("headers", headersJSON(request.requestHeaders)),
                    ("queryString", .array(queryString(request.url).map(nameValue))),
                    ("headersSize", .int(request.requestHeadBytes)),
                    ("bodySize", .int(request.requestBodyBytes)),
                ])
            ),
            (
                "response",
                .object([
                    ("status", .int(request.status ?? 0)),
                    ("statusText", .string(request.statusText ?? "")),
                    // The log keeps one version: the request's, which a server answers in kind.
                    ("httpVersion", .string(answered ? request.httpVersion : "")),
                    ("cookies", .array(responseCookies(request.responseHeaders))),
                    ("headers", headersJSON(request.responseHeaders)),
                    (
                        "content",
                        .object([
                            ("size", .int(max(0, request.responseBodyBytes))),
                            ("mimeType", .string(request.contentType ?? "x-unknown")),
                        ])
                    ),
                    ("redirectURL", .string(header("Location", in: request.responseHeaders) ?? "")),
                    ("headersSize", .int(answered ? request.responseHeadBytes : -1)),
                    ("bodySize", .int(answered ? request.responseBodyBytes : -1)),
                ])
            ),
            ("cache", .object([])),
            (
                "timings",
                .object([
                    ("blocked", -1), ("dns", -1), ("connect", -1), ("ssl", -1),
                    ("send", .int(timings.send)), ("wait", .int(timings.wait)), ("receive", .int(timings.receive)),
                ])
            ),
        ]
        if let upstream = request.upstream, let address = serverAddress(upstream) {
            fields.append(("serverIPAddress", .string(address)))
        }
        fields.append(("connection", .string(String(request.connectionID))))
        fields.append(("_reused", .bool(request.reused)))
        fields.append(
            (
                "_ats",
                .object([
                    // The request line's own verdict fields, under their log names.
                    (RequestField.compliant.rawValue, request.compliant),
                    (RequestField.action.rawValue, request.action),
                    (RequestField.rule.rawValue, request.rule), (RequestField.violations.rawValue, request.violations),
                    (RequestField.error.rawValue, request.error),
                    // The key exchange the verdict's handshake used: X25519MLKEM768 or a classic curve.
                    (RequestField.tlsGroup.rawValue, request.tlsGroup),
                    // Which app made it, as its User-Agent (or its CONNECT's) named it.
                    (RequestField.app.rawValue, request.app?.json ?? .null),
                ])
            ))
        if let error = request.upstreamError { fields.append(("_error", .string(error))) }
        if let upgrade = request.upgrade { fields.append(("_upgrade", .string(upgrade))) }
        return .object(fields)
    }

    // MARK: - Pieces

    private static func nameValue(_ pair: (name: String, value: String)) -> JSONValue {
        .object([("name", .string(pair.name)), ("value", .string(pair.value))])
    }

    private static func headersJSON(_ headers: [LoggedRequest.Header]?) -> JSONValue {
        .array((headers ?? []).map { nameValue(($0.name, $0.value)) })
    }

    private static func header(_ name: String, in headers: [LoggedRequest.Header]?) -> String? {
        headers?.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The value the daemon writes in place of a secret (without `--log-secrets`).
    static let redacted = "[redacted]"

    /// `Cookie: a=1; b=2` as HAR cookies; none when headers were not logged or the value was redacted.
    static func requestCookies(_ headers: [LoggedRequest.Header]?) -> [JSONValue] {
        var cookies: [JSONValue] = []
        for header in headers ?? [] where header.name.lowercased() == "cookie" && header.value != redacted {
            for pair in header.value.split(separator: ";") {
                let (name, value) = splitPair(pair)
                guard !name.isEmpty else { continue }
                cookies.append(nameValue((name, value)))
            }
        }
        return cookies
    }

    /// Each `Set-Cookie` as a HAR cookie: name, value, and the attributes HAR names.
    static func responseCookies(_ headers: [LoggedRequest.Header]?) -> [JSONValue] {
        var cookies: [JSONValue] = []
        for header in headers ?? [] where header.name.lowercased() == "set-cookie" && header.value != redacted {
            let parts = header.value.split(separator: ";", omittingEmptySubsequences: false)
            guard let first = parts.first else { continue }
            let (name, value) = splitPair(first)
            guard !name.isEmpty else { continue }
            var fields: [(String, JSONValue)] = [("name", .string(name)), ("value", .string(value))]
            for attribute in parts.dropFirst() {
                let (key, text) = splitPair(attribute)
                switch key.lowercased() {
                case "path": fields.append(("path", .string(text)))
                case "domain": fields.append(("domain", .string(text)))
                case "httponly": fields.append(("httpOnly", true))
                case "secure": fields.append(("secure", true))
                default: break
                }
            }
            cookies.append(.object(fields))
        }
        return cookies
    }

    private static func splitPair(_ text: Substring) -> (String, String) {
        let trimmed = text.trimmingSpaces
        guard let equals = trimmed.firstIndex(of: "=") else { return (String(trimmed), "") }
        return (
            String(trimmed[..<equals].trimmingSpaces), String(trimmed[trimmed.index(after: equals)...].trimmingSpaces)
        )
    }

    private static func withoutFragment(_ url: String) -> String {
        url.firstIndex(of: "#").map { String(url[..<$0]) } ?? url
    }

    /// The URL's query as name/value pairs, percent-decoded (`+` is a space, as in a form).
    package static func queryString(_ url: String) -> [(name: String, value: String)] {
        let url = withoutFragment(url)
        guard let mark = url.firstIndex(of: "?") else { return [] }
        return url[url.index(after: mark)...].split(separator: "&").map { pair in
            guard let equals = pair.firstIndex(of: "=") else { return (percentDecoded(pair), "") }
            return (percentDecoded(pair[..<equals]), percentDecoded(pair[pair.index(after: equals)...]))
        }
    }

    /// `%41` decoded, `+` a space; a `%` not followed by two hex digits is kept as it is, and bytes
    /// that are not UTF-8 become U+FFFD, so the output stays valid UTF-8.
    package static func percentDecoded(_ text: Substring) -> String {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        func hex(_ byte: UInt8) -> UInt8? {
            switch byte {
            case 0x30...0x39: byte - 0x30
            case 0x41...0x46: byte - 0x41 + 10
            case 0x61...0x66: byte - 0x61 + 10
            default: nil
            }
        }
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.count,
                let high = hex(bytes[index + 1]), let low = hex(bytes[index + 2])
            {
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `203.0.113.7:443` → `203.0.113.7`, `[2001:db8::1]:443` → `2001:db8::1`.
    package static func serverAddress(_ upstream: String) -> String? {
        if upstream.hasPrefix("["), let close = upstream.firstIndex(of: "]") {
            let address = upstream[upstream.index(after: upstream.startIndex)..<close]
            return address.isEmpty ? nil : String(address)
        }
        if let colon = upstream.lastIndex(of: ":"), upstream.firstIndex(of: ":") == colon {
            let address = upstream[..<colon]
            return address.isEmpty ? nil : String(address)
        }
        return upstream.isEmpty ? nil : upstream
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return text
    }
}

/// A `--host` pattern: an exact name (`api.example.com`) or `*.suffix` (`*.example.com`: every
/// name under example.com, not example.com itself). Case and a trailing dot do not matter.
package struct HostPattern: Sendable, Equatable, CustomStringConvertible {
    package let description: String
    private let name: String
    private let isSuffix: Bool

    package struct Failure: Error, Sendable, CustomStringConvertible {
        package var description: String
    }

    package init(parsing text: String) throws(Failure) {
        description = text
        let normalized = Self.normalize(text)
        if normalized.hasPrefix("*.") {
            name = String(normalized.dropFirst(2))
            isSuffix = true
        } else {
            name = normalized
            isSuffix = false
        }
        guard !name.isEmpty, !name.contains("*"), !name.contains("/"), !name.contains(" ") else {
            throw Failure(description: "\"\(text)\" is not a host name or a *.suffix pattern")
        }
    }

    package func matches(_ host: String) -> Bool {
        let host = Self.normalize(host)
        return isSuffix ? host.hasSuffix("." + name) : host == name
    }

    private static func normalize(_ text: String) -> String {
        var text = text.lowercased()
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        if text.hasSuffix(".") { text.removeLast() }
        return text
    }
}
