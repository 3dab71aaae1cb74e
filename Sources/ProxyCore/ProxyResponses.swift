import ATSPolicy

/// The proxy's own HTTP responses, as bytes.
enum ProxyResponse {
    static func text(status: Int, reason: String, headers: [(String, String)] = [], body: String) -> [UInt8] {
        let bodyBytes = Array(body.utf8)
        var head = "HTTP/1.1 \(status) \(reason)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head +=
            "Content-Type: text/plain; charset=utf-8\r\nContent-Length: \(bodyBytes.count)\r\nConnection: close\r\n\r\n"
        return Array(head.utf8) + bodyBytes
    }

    static let connectionEstablished = Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8)

    /// 403 for a connection ATS would refuse: the violations by name and Apple's error in headers,
    /// one line per violation in words with the Info.plist key that would allow it.
    static func blocked(_ verdict: Verdict, host: String) -> [UInt8] {
        text(
            status: 403, reason: "Forbidden", headers: blockedHeaders(verdict),
            body: blockedText(
                verdict, opening: "atsproxy blocked this connection to \(host): App Transport Security would refuse it."
            ))
    }

    /// The `X-ATS-*` headers of a blocked connection: the violations by name, Apple's error.
    static func blockedHeaders(_ verdict: Verdict) -> [(String, String)] {
        var headers = [("X-ATS-Violations", verdict.violations.map(\.kind.name).joined(separator: ","))]
        if let error = verdict.error { headers.append(("X-ATS-Error", error.description)) }
        return headers
    }

    /// `opening`, then each violation in words with the Info.plist key that would allow it.
    static func blockedText(_ verdict: Verdict, opening: String) -> String {
        var lines = [opening, ""]
        for violation in verdict.violations {
            lines.append("\(violation.kind.name): \(violation.explanation).")
            lines.append("  allowed by: \(violation.allowedBy ?? "no Info.plist key; the server must change")")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// 403 for a CONNECT to a server that does not speak TLS, where ATS forbids cleartext to it: the
    /// `cleartext` verdict's headers, and a body that says what the server sent instead.
    static func cleartextServerBlocked(_ verdict: Verdict, host: String, reason: String) -> [UInt8] {
        let allowed = verdict.violations.first?.allowedBy ?? "NSExceptionAllowsInsecureHTTPLoads"
        let body =
            "atsproxy blocked this connection to \(host): the server does not speak TLS (\(reason)), "
            + "and App Transport Security does not allow cleartext to it.\n\nallowed by: \(allowed)\n"
        return text(
            status: 403, reason: "Forbidden", headers: [("X-ATS-Violations", "cleartext"), ("X-ATS-Error", "-1022")],
            body: body)
    }

    /// 403 for cleartext http:// where ATS requires HTTPS, in Apple's words.
    static func cleartextBlocked(_ verdict: Verdict, host: String) -> [UInt8] {
        let allowed = verdict.violations.first?.allowedBy ?? "NSExceptionAllowsInsecureHTTPLoads"
        let body =
            "App Transport Security has blocked a cleartext HTTP (http://) resource load since it is insecure. "
            + "Temporary exceptions can be configured via your app's Info.plist file.\n\nhost: \(host)\nallowed by: \(allowed)\n"
        return text(
            status: 403, reason: "Forbidden", headers: [("X-ATS-Violations", "cleartext"), ("X-ATS-Error", "-1022")],
            body: body)
    }
}
