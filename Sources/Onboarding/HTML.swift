import ProxyWire

/// The pages' HTML: an escaper for every value that is not ours, and the document around a page's
/// body (one inline style sheet, no script, nothing fetched from elsewhere).
enum HTML {
    /// `text` safe as element content and as a double- or single-quoted attribute value.
    static func escaped(_ text: String) -> String { HTMLText.escaped(text) }

    /// A paragraph of plain text in which `code` spans are written between backquotes (the form the
    /// terminal shows), as HTML: escaped, the spans in `<code>`.
    static func withCode(_ text: String) -> String {
        text.split(separator: "`", omittingEmptySubsequences: false).enumerated().map { index, part in
            index % 2 == 1 ? "<code>\(escaped(String(part)))</code>" : escaped(String(part))
        }.joined()
    }

    /// A whole HTML5 document: `title` is escaped here, `body` is markup the caller built (with its
    /// values escaped).
    static func document(title: String, body: String) -> String {
        """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="color-scheme" content="light dark">
        <title>\(escaped(title))</title>
        <style>\(style)</style>
        </head>
        <body>
        <main>
        \(body)
        </main>
        </body>
        </html>

        """
    }

    /// Readable on a 390-pixel phone: one column, system font, long values (fingerprints, URLs)
    /// wrapped anywhere; dark mode through `prefers-color-scheme`. QR codes stay on white, which a
    /// scanner needs.
    static let style = """
        body{margin:0;font:16px/1.5 -apple-system,system-ui,sans-serif;background:#fff;color:#1d1d1f}\
        main{max-width:40rem;margin:0 auto;padding:1rem}\
        h1{font-size:1.5rem;margin:.5rem 0 1rem}h2{font-size:1.2rem;margin:1.5rem 0 .5rem}\
        section{border:1px solid #d2d2d7;border-radius:12px;padding:.25rem 1rem 1rem;margin:1rem 0}\
        .ok{border-color:#34c759;background:#f0fff4}.todo{border-color:#ff9f0a;background:#fffaf0}\
        code,.mono{font-family:ui-monospace,Menlo,monospace;font-size:.9em;overflow-wrap:anywhere}\
        a{color:#0066cc;overflow-wrap:anywhere}a.button{display:inline-block;padding:.5rem 1rem;margin:.25rem .25rem .25rem 0;\
        border-radius:8px;background:#0066cc;color:#fff;text-decoration:none}\
        li{margin:.25rem 0}figure{margin:1rem 0}figure svg{width:100%;max-width:220px;height:auto;display:block}\
        figcaption{font-size:.9rem}\
        @media (prefers-color-scheme:dark){body{background:#000;color:#f5f5f7}section{border-color:#424245}\
        .ok{background:#06230f;border-color:#30d158}.todo{background:#2b1d00;border-color:#ff9f0a}\
        a{color:#2997ff}a.button{background:#0a84ff;color:#fff}}
        """
}
