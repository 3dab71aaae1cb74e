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
        if let address = IPAddress(request.client)?.unmapped, ProxySettings.loopback.contains(where: { $0.contains(address) }) {
            return .pass(addHeaders: [])
        }
        guard let token else {
            return .refuse(.text(
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
        let a = Array(given.utf8), b = Array(token.utf8)
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
