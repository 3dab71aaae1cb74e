import ATSPolicy
import ProxyWire

extension ProxyResponse {
    /// The page-style block of intercept mode (``BlockStyle/page``): a 403 inside the device's own
    /// TLS session, for `url`, with the `X-ATS-*` headers of a blocked CONNECT and a body a person
    /// can read: HTML for a browser (its Accept field asks for text/html), text otherwise, naming
    /// each violation and the Info.plist key that would allow it. The connection closes after it.
    static func blockedPage(_ verdict: Verdict, host: String, url: String, head: RequestHead) -> [UInt8] {
        let wantsHTML = head.headers.values(for: "Accept").contains { $0.lowercased().contains("text/html") }
        let page = blockedPageContent(verdict, host: host, url: url, wantsHTML: wantsHTML)
        var response = "HTTP/1.1 403 Forbidden\r\n"
        for (name, value) in page.headers { response += "\(name): \(value)\r\n" }
        response += "Content-Length: \(page.body.count)\r\nConnection: close\r\n\r\n"
        return Array(response.utf8) + page.body
    }

    /// The page's header fields (Content-Type included, no framing) and body, for either HTTP
    /// version: HTML when `wantsHTML`, text otherwise.
    static func blockedPageContent(_ verdict: Verdict, host: String, url: String, wantsHTML: Bool) -> (
        headers: [(String, String)], body: [UInt8]
    ) {
        let headers = blockedHeaders(verdict) + [("Cache-Control", "no-store")]
        guard wantsHTML else {
            let opening = "atsproxy blocked \(url): App Transport Security would refuse the connection to \(host)."
            return (
                headers + [("Content-Type", "text/plain; charset=utf-8")],
                Array(blockedText(verdict, opening: opening).utf8)
            )
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
        return (headers + [("Content-Type", "text/html; charset=utf-8")], Array(body.utf8))
    }
}
