import ATSPolicy
import ProxyCore
import ProxyWire

/// Who may use the web listener: clients on loopback always; any other only with the web token,
/// given as `?token=` (a cookie then keeps it for the page's own requests and its event stream),
/// the cookie, or `Authorization: Bearer` (the scheme in any case, RFC 9110 §11.1). A value: a
/// reload that changes the token makes a new one. Wrong tokens are told apart from missing ones
/// (``Answer/wrongToken(_:)``) so that ``WebTokenGuard`` can count and slow them.
struct WebAccess: Sendable {
    static let cookieName = "atsproxy_token"
    /// nil: only loopback clients are served.
    var token: String?

    /// What the token rule says of one request.
    enum Answer {
        /// Served, with these fields added (a cookie that keeps a token given in the query).
        case admit(addHeaders: [(name: String, value: String)])
        /// Refused with this answer, no token having been given (or none being set): not a guess.
        case refuse(LocalResponse)
        /// A token was given and it is not the one: refused with this answer, and a guess to count.
        case wrongToken(LocalResponse)
    }

    /// Whether the request is this machine's own: a loopback client whose Host names this machine,
    /// served without a token (and never slowed).
    func isLocal(_ request: LocalRequest) -> Bool {
        guard let address = IPAddress(request.client)?.unmapped else { return false }
        return ProxySettings.loopback.contains(where: { $0.contains(address) })
            && Self.namesThisMachine(request.headers.first("Host"))
    }

    func decide(_ request: LocalRequest) -> Answer {
        if isLocal(request) { return .admit(addHeaders: []) }
        guard let token else {
            if IPAddress(request.client).map({ address in
                ProxySettings.loopback.contains { $0.contains(address.unmapped) }
            }) == true {
                return .refuse(
                    .text(
                        "this web listener answers to an address of this machine (127.0.0.1, [::1], localhost), not to "
                            + "\(request.headers.first("Host") ?? "no Host"): a page of another site may be reading it through DNS rebinding\n",
                        status: 403, reason: "Forbidden"))
            }
            return .refuse(
                .text(
                    "this web listener serves this machine only: start atsproxy with --web-token to let \(request.client) in\n",
                    status: 403, reason: "Forbidden"))
        }
        let query = request.queryValue("token")
        if let query, Self.same(query, token) {
            // HttpOnly: the page's scripts never see it; Strict: no other site's page sends it.
            return .admit(addHeaders: [
                ("Set-Cookie", "\(Self.cookieName)=\(token); Path=/; HttpOnly; SameSite=Strict")
            ])
        }
        let cookie = Self.cookie(in: request)
        if let cookie, Self.same(cookie, token) { return .admit(addHeaders: []) }
        let bearer = request.headers.first("Authorization").flatMap(Self.bearerToken)
        if let bearer, Self.same(bearer, token) { return .admit(addHeaders: []) }
        var refusal = LocalResponse.text(
            "this web listener needs its token from \(request.client): open http://\(request.listener)/?token=TOKEN "
                + "(the --web-token value), or send Authorization: Bearer TOKEN\n",
            status: 401, reason: "Unauthorized")
        refusal.headers.append(("WWW-Authenticate", "Bearer realm=\"atsproxy\""))
        return query != nil || cookie != nil || bearer != nil ? .wrongToken(refusal) : .refuse(refusal)
    }

    /// The token of an `Authorization` value whose scheme is Bearer, matched in any case (RFC 9110
    /// §11.1: `bearer`, `BEARER`), after one or more spaces; nil for another scheme or no token.
    static func bearerToken(_ authorization: String) -> String? {
        guard let space = authorization.firstIndex(of: " "),
            authorization[..<space].lowercased() == "bearer"
        else { return nil }
        let token = authorization[space...].drop { $0 == " " }
        return token.isEmpty ? nil : String(token.trimmingSpaces)
    }

    /// Whether a loopback client's Host names this machine (an IP address or localhost), as a
    /// browser's does for `http://127.0.0.1:8081/`. A page of another site whose name was made to
    /// resolve to 127.0.0.1 (DNS rebinding) sends its own name instead, and gets nothing without
    /// the token. No Host (HTTP/1.0 tools) is taken as this machine.
    static func namesThisMachine(_ host: String?) -> Bool {
        guard var host = host?.lowercased(), !host.isEmpty else { return true }
        if host.hasPrefix("[") {
            return host.firstIndex(of: "]").map { IPAddress(host[host.index(after: host.startIndex)..<$0]) != nil }
                ?? false
        }
        if let colon = host.lastIndex(of: ":") { host = String(host[..<colon]) }
        if host.hasSuffix(".") { host.removeLast() }
        return host == "localhost" || host.hasSuffix(".localhost") || IPAddress(host) != nil
    }

    private static func cookie(in request: LocalRequest) -> String? {
        for header in request.headers.values(for: "Cookie") {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0].trimmingSpaces == cookieName { return String(parts[1].trimmingSpaces) }
            }
        }
        return nil
    }

    /// Compares without stopping at the first difference, so the time taken says nothing of the token.
    static func same(_ given: String, _ token: String) -> Bool {
        let a = Array(given.utf8)
        let b = Array(token.utf8)
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for index in 0..<min(a.count, b.count) { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var text = self
        while text.first == " " { text.removeFirst() }
        while text.last == " " { text.removeLast() }
        return text
    }
}
