import ATSPolicy
import ProxyWire

extension ProxyResponse {
    /// The page-style block of intercept mode (``BlockStyle/page``): a 403 inside the device's own
    /// TLS session, for `url`, with the `X-ATS-*` headers of a blocked CONNECT and a body a person
    /// can read: HTML for a browser (its Accept field asks for text/html), text otherwise, naming
    /// each violation and the Info.plist key that would allow it. The connection closes after it.
    static func blockedPage(_ verdict: Verdict, host: String, url: String, head: RequestHead) -> [UInt8] {
        let headers = blockedHeaders(verdict) + [("Cache-Control", "no-store")]
        let wantsHTML = head.headers.values(for: "Accept").contains { $0.lowercased().contains("text/html") }
        guard wantsHTML else {
            let opening = "atsproxy blocked \(url): App Transport Security would refuse the connection to \(host)."
            return text(
                status: 403, reason: "Forbidden", headers: headers, body: blockedText(verdict, opening: opening))
        }
        var body = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Blocked by App Transport Security</title>
            <style>body{font:16px/1.5 -apple-system,system-ui,sans-serif;margin:1.5em;max-width:40em}\
            code{background:#f2f2f2;padding:0 .2em}li{margin:.6em 0}</style></head><body>
            <h1>Blocked by App Transport Security</h1>
            <p>An iPhone app would not be able to load <code>\(ElementText.escaped(url))</code>: \
            ATS refuses the connection to <code>\(ElementText.escaped(host))</code>.</p>
            <ul>

            """
        for violation in verdict.violations {
            body +=
                "<li><strong>\(ElementText.escaped(violation.kind.name))</strong>: \(ElementText.escaped(violation.explanation)).<br>"
            body +=
                "Allowed by: <code>\(ElementText.escaped(violation.allowedBy ?? "no Info.plist key; the server must change"))</code></li>\n"
        }
        body += "</ul>\n"
        if let error = verdict.error {
            body += "<p>The app would see <code>\(ElementText.escaped(error.description))</code>.</p>\n"
        }
        body += "<p><small>atsproxy, intercept mode</small></p>\n</body></html>\n"
        let bytes = Array(body.utf8)
        var response = "HTTP/1.1 403 Forbidden\r\n"
        for (name, value) in headers { response += "\(name): \(value)\r\n" }
        response +=
            "Content-Type: text/html; charset=utf-8\r\nContent-Length: \(bytes.count)\r\nConnection: close\r\n\r\n"
        return Array(response.utf8) + bytes
    }
}
