/// Interprets a request-target for a forward proxy (RFC 9112 §3.2).
enum RequestTargetParser {
    static let originFormReason =
        "this is a proxy: send the absolute URL (GET http://host/path) or CONNECT host:port"

    /// `method` decides the form: CONNECT takes authority-form only (RFC 9110 §9.3.6), every
    /// other method absolute-form only. Methods are case-sensitive (RFC 9110 §9.1), so
    /// "connect" is some other method.
    static func parse(method: String, target: ArraySlice<UInt8>) throws(HeadError) -> RequestTarget {
        if method == "CONNECT" {
            guard target.first != UInt8(ascii: "/"), !isAsterisk(target), schemeSeparator(in: target) == nil else {
                throw fail("CONNECT needs an authority target (CONNECT host:port), not a path or URL")
            }
            switch HTTPAuthority.parse(target, portRequired: true) {
            case .success(let authority):
                // parse guarantees the port when portRequired is true.
                guard let port = authority.port else { throw fail("the CONNECT target has no port") }
                return .authority(host: authority.host, port: port)
            case .failure(let problem):
                throw fail("the CONNECT target \(problem.sentence)")
            }
        }
        if isAsterisk(target) {
            throw fail(
                "asterisk-form (OPTIONS *) is for origin servers: send OPTIONS with an absolute URL to this proxy")
        }
        if target.first == UInt8(ascii: "/") { throw fail(originFormReason) }
        guard let separator = schemeSeparator(in: target) else {
            if case .success = HTTPAuthority.parse(target, portRequired: true) {
                throw fail("a host:port target (authority-form) is only allowed with CONNECT, not with \(method)")
            }
            throw fail("the request target is not an absolute http:// or https:// URL")
        }
        return try parseAbsolute(target, schemeEnd: separator)
    }

    /// absolute-URI with a hierarchical part: scheme "://" authority path-abempty [ "?" query ].
    private static func parseAbsolute(_ target: ArraySlice<UInt8>, schemeEnd: Int) throws(HeadError) -> RequestTarget {
        let scheme = HTTPSyntax.lowercased(String(decoding: target[..<schemeEnd], as: UTF8.self))
        guard scheme == "http" || scheme == "https" else {
            throw fail("only http and https URLs can be proxied, not \(scheme):")
        }
        let afterScheme = target[(schemeEnd + 3)...]
        // A fragment is never sent (RFC 9112 §3.2: absolute-URI has no fragment); a target with
        // one was built wrongly, and where it ends would be a guess.
        if afterScheme.contains(UInt8(ascii: "#")) { throw fail("the request target contains a #fragment") }
        let authorityEnd =
            afterScheme.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? afterScheme.endIndex
        let authority: HTTPAuthority
        switch HTTPAuthority.parse(afterScheme[..<authorityEnd], portRequired: false) {
        case .success(let parsed): authority = parsed
        case .failure(let problem): throw fail("the URL \(problem.sentence)")
        }
        // An empty path is sent as "/" (RFC 9112 §3.2.1). Path characters are not checked beyond
        // visible ASCII: browsers send characters such as '|' unescaped and origins accept them.
        var pathAndQuery = String(decoding: afterScheme[authorityEnd...], as: UTF8.self)
        if !pathAndQuery.hasPrefix("/") { pathAndQuery = "/" + pathAndQuery }
        return .absolute(scheme: scheme, host: authority.host, port: authority.port, pathAndQuery: pathAndQuery)
    }

    /// An origin-form target (`/path?query`), as an intercepted connection's requests carry it:
    /// absolute with `origin`'s scheme and the Host field's authority (already checked), or the
    /// origin's host and port when there is no Host field.
    static func parseOriginForm(_ target: ArraySlice<UInt8>, origin: RequestOrigin, host: String?) throws(HeadError)
        -> RequestTarget
    {
        if target.contains(UInt8(ascii: "#")) { throw fail("the request target contains a #fragment") }
        let pathAndQuery = String(decoding: target, as: UTF8.self)
        if let host, !host.isEmpty,
            case .success(let authority) = HTTPAuthority.parse(Array(host.utf8)[...], portRequired: false)
        {
            return .absolute(
                scheme: origin.scheme, host: authority.host, port: authority.port, pathAndQuery: pathAndQuery)
        }
        let defaultPort: UInt16 = origin.scheme == "https" ? 443 : 80
        return .absolute(
            scheme: origin.scheme, host: origin.host, port: origin.port == defaultPort ? nil : origin.port,
            pathAndQuery: pathAndQuery)
    }

    /// Where "://" starts, if the target begins with a syntactically valid scheme
    /// (RFC 3986 §3.1: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )).
    private static func schemeSeparator(in target: ArraySlice<UInt8>) -> Int? {
        guard let colon = target.firstIndex(of: HTTPSyntax.colon), colon > target.startIndex,
            target.endIndex - colon >= 3, target[colon + 1] == UInt8(ascii: "/"),
            target[colon + 2] == UInt8(ascii: "/"),
            let first = target.first, HTTPSyntax.isLetter(first),
            target[..<colon].allSatisfy(isSchemeCharacter)
        else { return nil }
        return colon
    }

    /// The asterisk-form target "*" (RFC 9112 §3.2.4).
    private static func isAsterisk(_ target: ArraySlice<UInt8>) -> Bool {
        target.count == 1 && target.first == UInt8(ascii: "*")
    }

    private static func isSchemeCharacter(_ byte: UInt8) -> Bool {
        HTTPSyntax.isLetter(byte) || HTTPSyntax.isDigit(byte)
            || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
    }

    private static func fail(_ reason: String) -> HeadError {
        .malformed(.request, reason)
    }
}
