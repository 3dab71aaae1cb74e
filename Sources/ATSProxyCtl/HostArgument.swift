import ATSPolicy

/// A host from the command line: a bare host, host:port, [v6]:port, or a URL.
struct HostArgument {
    var host: HostIdentity
    var scheme: URLScheme
    /// The port when the argument names one.
    var port: UInt16?

    struct Failure: Error {
        var message: String
    }

    init(parsing text: String, scheme explicitScheme: URLScheme?) throws(Failure) {
        var rest = Substring(text)
        var scheme = explicitScheme ?? .https
        if let separator = rest.firstRange(of: "://") {
            let urlScheme = rest[..<separator.lowerBound].lowercased()
            guard
                let parsed = URLScheme(rawValue: urlScheme)
                    ?? (urlScheme == "wss" ? .https : urlScheme == "ws" ? .http : nil)
            else {
                throw Failure(message: "\"\(urlScheme)\" is not a scheme ATS governs (http, https, ws, wss)")
            }
            if let explicitScheme, explicitScheme != parsed {
                throw Failure(message: "the URL says \(urlScheme) but --scheme says \(explicitScheme.rawValue)")
            }
            scheme = parsed
            rest = rest[separator.upperBound...]
            if let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
            if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        }
        // Drop a port: "host:443" or "[::1]:443"; a bare IPv6 literal has several colons and no port.
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else {
                    throw Failure(message: "unexpected \"\(after)\" after the IPv6 address")
                }
                port = try HostArgument.checkPort(after.dropFirst())
            }
            rest = rest[...close]
        } else if let colon = rest.firstIndex(of: ":"), rest.lastIndex(of: ":") == colon {
            port = try HostArgument.checkPort(rest[rest.index(after: colon)...])
            rest = rest[..<colon]
        }
        do {
            host = try HostIdentity(parsing: rest)
        } catch {
            throw Failure(message: error.description)
        }
        self.scheme = scheme
    }

    /// A port as a URL or `host:port` writes it: 1 to 65535, digits only.
    static func checkPort(_ port: Substring) throws(Failure) -> UInt16 {
        guard (1...5).contains(port.count), port.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let number = UInt16(port),
            number > 0
        else { throw Failure(message: "\"\(port)\" is not a port number (1-65535)") }
        return number
    }
}
