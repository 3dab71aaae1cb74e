import ATSPolicy

/// A URL `diagnose` loads: the argument, or a redirect's `Location` resolved against the URL that
/// sent it. Only what a load needs: the scheme, the host, the port, and the request target.
struct LoadURL: Equatable, CustomStringConvertible {
    var scheme: URLScheme
    var host: HostIdentity
    /// The host as written (its case kept), for display; IPv6 in brackets.
    var hostText: String
    /// Nil when the URL names none: the scheme's.
    var explicitPort: UInt16?
    /// The path and query, `/` when the URL has neither; the fragment is never sent.
    var target: String

    var port: UInt16 { explicitPort ?? (scheme == .https ? 443 : 80) }

    var description: String { "\(scheme.rawValue)://\(authority)\(target)" }

    /// `host[:port]`, as the `Host` field and the URL write it.
    var authority: String { hostText + (explicitPort.map { ":\($0)" } ?? "") }

    struct Failure: Error, Equatable, CustomStringConvertible {
        var description: String
    }

    /// An absolute `http` or `https` URL (`ws` and `wss` stand for them, as ATS treats them alike).
    init(parsing text: String) throws(Failure) {
        guard let separator = text.firstRange(of: "://") else {
            throw Failure(description: "\"\(text)\" is not an absolute URL")
        }
        let name = text[..<separator.lowerBound].lowercased()
        switch name {
        case "https", "wss": scheme = .https
        case "http", "ws": scheme = .http
        default: throw Failure(description: "\"\(name)\" is not a scheme ATS governs (http, https, ws, wss)")
        }
        var rest = text[separator.upperBound...]
        if let fragment = rest.firstIndex(of: "#") { rest = rest[..<fragment] }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        let path = rest[authorityEnd...]
        target = path.isEmpty ? "/" : path.hasPrefix("?") ? "/" + path : String(path)
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var hostPart = authority
        explicitPort = nil
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            hostPart = authority[...close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else {
                    throw Failure(description: "unexpected \"\(after)\" after the IPv6 address")
                }
                explicitPort = try LoadURL.port(after.dropFirst())
            }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            explicitPort = try LoadURL.port(authority[authority.index(after: colon)...])
        }
        guard !hostPart.isEmpty else { throw Failure(description: "\"\(text)\" names no host") }
        do {
            host = try HostIdentity(parsing: hostPart)
        } catch {
            throw Failure(description: "\"\(hostPart)\" is not a host: \(error)")
        }
        hostText = String(hostPart)
    }

    /// A `Location` value resolved against this URL (RFC 9110 §10.2.2, RFC 3986 §5.2): absolute,
    /// scheme-relative (`//host/path`), absolute-path, query-only or relative to this URL's path.
    func resolving(_ location: String) throws(Failure) -> LoadURL {
        let location = location.trimmingWhitespace
        if location.contains("://") { return try LoadURL(parsing: location) }
        if location.hasPrefix("//") { return try LoadURL(parsing: scheme.rawValue + ":" + location) }
        var resolved = self
        let withoutFragment = location.prefix { $0 != "#" }
        if withoutFragment.hasPrefix("/") {
            resolved.target = String(withoutFragment)
        } else if withoutFragment.hasPrefix("?") {
            resolved.target = String(target.prefix { $0 != "?" }) + withoutFragment
        } else if withoutFragment.isEmpty {
            resolved.target = String(target)
        } else {
            let path = target.prefix { $0 != "?" }
            let directory = path[...(path.lastIndex(of: "/") ?? path.startIndex)]
            resolved.target = String(directory + withoutFragment)
        }
        return resolved
    }

    /// The request `diagnose` sends: a GET, closing after the response, as plain as URLSession's.
    var request: [UInt8] {
        Array(
            "GET \(target) HTTP/1.1\r\nHost: \(authority)\r\nAccept: */*\r\nUser-Agent: atsproxyctl-diagnose\r\nConnection: close\r\n\r\n"
                .utf8)
    }

    private static func port(_ text: Substring) throws(Failure) -> UInt16 {
        do {
            return try HostArgument.checkPort(text)
        } catch {
            throw Failure(description: error.message)
        }
    }
}

extension String {
    /// Without leading and trailing spaces and tabs (a field value's optional whitespace).
    fileprivate var trimmingWhitespace: String {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        return String(drop(while: isBlank).reversed().drop(while: isBlank).reversed())
    }
}
