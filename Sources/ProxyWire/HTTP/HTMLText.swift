/// Text for the proxy's own HTML pages (onboarding, live view): every value the page did not
/// write itself (a client address, a host name, a logged error) goes through ``escaped(_:)``.
package enum HTMLText {
    /// `text` safe as element content and as a double- or single-quoted attribute value:
    /// `& < > " '` as character references.
    package static func escaped(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default: result.append(character)
            }
        }
        return result
    }
}
