import ProxyWire

/// HTML made from logged strings, which come from the network (host names, errors, URLs): every one
/// goes through ``escaped(_:)`` before it reaches a page.
enum HTML {
    /// Text safe in an element and in a quoted attribute: `& < > " '` as references.
    static func escaped(_ text: String) -> String { HTMLText.escaped(text) }

    /// A query value percent-encoded (only unreserved characters left as they are), for a link.
    static func queryValue(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                result.append(Character(UnicodeScalar(byte)))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                result += "%" + (hex.count == 1 ? "0" : "") + hex
            }
        }
        return result
    }

    /// The link to a host's page.
    static func hostLink(_ host: String) -> String {
        "<a href=\"/host?name=\(queryValue(host))\">\(escaped(host))</a>"
    }

    /// A whole page: doctype, viewport for a phone, the shared style, `body` as given.
    static func page(title: String, body: String, script: String = "") -> String {
        """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(escaped(title))</title>
        <style>\(style)</style>
        </head>
        <body>
        \(body)\(script.isEmpty ? "" : "<script>\(script)</script>\n")</body>
        </html>

        """
    }

    /// Small, readable on a phone: the hosts table (class `cards`) becomes one card per host on a
    /// narrow screen; other tables scroll sideways rather than squeeze.
    static let style = """
        body{font:15px/1.45 -apple-system,system-ui,sans-serif;margin:1em;color:#222}\
        h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.5em}\
        .scroll{overflow-x:auto}table{border-collapse:collapse;width:100%}\
        th,td{text-align:left;padding:.3em .5em;border-bottom:1px solid #ddd;vertical-align:top}\
        td.n{text-align:right}pre{background:#f4f4f4;padding:.6em;overflow-x:auto;white-space:pre}\
        code{background:#f4f4f4;padding:0 .2em}.v-blocked{color:#b00020;font-weight:600}\
        .v-not_compliant{color:#a15c00;font-weight:600}.v-failed{color:#555}.v-allowed{color:#1b6e1b}\
        form{display:flex;flex-wrap:wrap;gap:.5em;align-items:end}label{display:flex;flex-direction:column;font-size:.9em}\
        .note{color:#555;font-size:.9em}ul.violations{margin:0;padding-left:1.1em}\
        tr.app-group th{background:#eef2f7;padding-top:.6em}\
        @media (max-width:640px){.cards thead{display:none}.cards,.cards tbody,.cards tr,.cards td{display:block}\
        .cards tr{border:1px solid #ddd;border-radius:8px;margin:.6em 0;padding:.3em .2em}.cards td{border:none;padding:.15em .5em}\
        .cards td.n{text-align:left}.cards td:nth-child(n+4)::before{color:#555;font-size:.9em}\
        .cards td:nth-child(4)::before{content:"Requests: "}.cards td:nth-child(5)::before{content:"Connections: "}\
        .cards td:nth-child(6)::before{content:"Last seen: "}.cards td:nth-child(7)::before{content:"Clients: "}}
        """

    /// The `Content-Security-Policy` of every page: the inline style and script only, requests to
    /// this origin only, so a logged string that slipped past escaping could load nothing.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; "
        + "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
}
