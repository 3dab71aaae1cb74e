extension HTTPArchive {
    /// The host of an absolute URL (`https://host:port/…`), without brackets or port.
    package static func host(ofURL url: String) -> String? {
        guard let separator = url.firstRange(of: "://") else { return nil }
        var authority = url[separator.upperBound...]
        if let end = authority.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) {
            authority = authority[..<end]
        }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            return String(authority[authority.index(after: authority.startIndex)..<close])
        }
        if let colon = authority.firstIndex(of: ":") { authority = authority[..<colon] }
        return authority.isEmpty ? nil : String(authority)
    }
}
