/// A parsed request head, as a client sent it to the proxy.
package struct RequestHead: Sendable, Hashable {
    /// A token (RFC 9110 §9.1); case-sensitive, and methods the proxy does not know are kept.
    package let method: String
    package let target: RequestTarget
    /// 1.0 or 1.1.
    package let version: HTTPVersion
    /// Editable, so the proxy can add or remove fields before ``headForOrigin(via:)``.
    package var headers: HTTPHeaders
    /// Whether the request line's target was origin-form (`GET /path`), made absolute with the
    /// parser's origin: a request sent to the proxy as to a web server, or inside intercepted TLS.
    package let arrivedInOriginForm: Bool

    init(
        method: String, target: RequestTarget, version: HTTPVersion, headers: HTTPHeaders,
        arrivedInOriginForm: Bool = false
    ) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.arrivedInOriginForm = arrivedInOriginForm
    }

    /// Builds the head from a scanned request line, applying the checks that need the whole head.
    /// With an `origin` (the head came inside an intercepted TLS connection, as an origin server
    /// gets it), an origin-form target is made absolute with the origin's scheme and the Host
    /// field's authority (the origin's own host and port without one).
    init(line: RequestLine, headers: HTTPHeaders, origin: RequestOrigin? = nil) throws(HeadError) {
        let target: RequestTarget
        if let origin, Self.takesOriginForm(line, origin: origin) {
            try Self.checkHostFields(headers, knownValid: nil)
            target = try RequestTargetParser.parseOriginForm(
                line.target, origin: origin, host: headers.values(for: "Host").first)
            self.init(
                method: line.method, target: target, version: line.version, headers: headers, arrivedInOriginForm: true)
            return
        }
        target = try RequestTargetParser.parse(method: line.method, target: line.target)
        // A CONNECT target is an authority that has just parsed with its port required, which is
        // all the Host check asks and more: a Host field that repeats it byte for byte, as
        // clients send it, need not be parsed a second time.
        let validAuthority: ArraySlice<UInt8>? = if case .authority = target { line.target } else { nil }
        try Self.checkHostFields(headers, knownValid: validAuthority)
        self.init(method: line.method, target: target, version: line.version, headers: headers)
    }

    /// Whether `line`'s target is read as origin-form, made absolute with the parser's `origin`
    /// (nil: a request to the proxy, where only absolute-form and CONNECT's authority are taken).
    static func takesOriginForm(_ line: RequestLine, origin: RequestOrigin?) -> Bool {
        origin != nil && line.method != "CONNECT" && line.target.first == UInt8(ascii: "/")
    }

    /// RFC 9112 §3.2: "A server MUST respond with a 400 (Bad Request) status code to any ...
    /// request message that contains more than one Host header field line or a Host header
    /// field with an invalid field value." A missing Host is accepted although §3.2 also asks
    /// for it in HTTP/1.1, because a proxy takes the host from the target (§3.2.2) and some
    /// clients leave Host out of CONNECT.
    private static func checkHostFields(_ headers: HTTPHeaders, knownValid: ArraySlice<UInt8>?) throws(HeadError) {
        var host: HTTPField?
        for field in headers.fields where field.hasName("Host") {
            guard host == nil else { throw .malformed(.request, "the request has more than one Host header") }
            host = field
        }
        guard let host, !host.valueBytes.isEmpty else { return }
        if let knownValid, host.valueBytes[...] == knownValid { return }
        if case .failure(let problem) = HTTPAuthority.parse(host.valueBytes[...], portRequired: false) {
            throw .malformed(.request, "the Host header \(problem.sentence)")
        }
    }
}

/// The server an intercepted connection's requests go to: what their origin-form targets
/// (`GET /path`) are relative to.
package struct RequestOrigin: Sendable, Hashable {
    /// "https" inside TLS.
    package var scheme: String
    /// The server's name (the SNI, or the CONNECT host), for a request with no Host field:
    /// lowercased, as request targets are (an SNI may come in any case), IPv6 without brackets.
    package var host: String
    package var port: UInt16

    package init(scheme: String, host: String, port: UInt16) {
        self.scheme = scheme
        self.host = HTTPSyntax.lowercased(host)
        self.port = port
    }
}
