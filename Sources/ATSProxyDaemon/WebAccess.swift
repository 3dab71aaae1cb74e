import ATSPolicy
import ProxyCore
import ProxyWire

/// Who may use the web listener: clients on loopback always; any other only with the web token,
/// given as `?token=` (a cookie then keeps it for the page's own requests and its event stream),
/// the cookie, or `Authorization: Bearer`. A value: a reload that changes the token makes a new one.
struct WebAccess: Sendable {
    static let cookieName = "atsproxy_token"
    /// nil: only loopback clients are served.
    var token: String?

    func decide(_ request: LocalRequest) -> GateDecision {
        if let address = IPAddress(request.client)?.unmapped,
            ProxySettings.loopback.contains(where: { $0.contains(address) }),
            Self.namesThisMachine(request.headers.first("Host"))
        {
            return .pass(addHeaders: [])
        }
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
        if let given = request.queryValue("token"), Self.same(given, token) {
            // HttpOnly: the page's scripts never see it; Strict: no other site's page sends it.
            return .pass(addHeaders: [("Set-Cookie", "\(Self.cookieName)=\(token); Path=/; HttpOnly; SameSite=Strict")])
        }
        if let cookie = Self.cookie(in: request), Self.same(cookie, token) { return .pass(addHeaders: []) }
        if let authorization = request.headers.first("Authorization"), authorization.hasPrefix("Bearer "),
            Self.same(String(authorization.dropFirst("Bearer ".count)), token)
        {
            return .pass(addHeaders: [])
        }
        var refusal = LocalResponse.text(
            "this web listener needs its token from \(request.client): open http://\(request.listener)/?token=TOKEN "
                + "(the --web-token value), or send Authorization: Bearer TOKEN\n",
            status: 401, reason: "Unauthorized")
        refusal.headers.append(("WWW-Authenticate", "Bearer realm=\"atsproxy\""))
        return .refuse(refusal)
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
