/// One host the PAC file sends to the proxy (`--pac-hosts`, or `/proxy.pac?hosts=`): an exact name
/// or IP address ("api.example.com", "192.0.2.7", "fd00::7"), or a domain with everything under it
/// ("*.example.com").
///
/// `*.example.com` matches example.com itself as well as every name under it: an app that calls
/// both would otherwise reach the apex DIRECT, skipping the ATS check without a word.
package struct PACHostPattern: Sendable, Equatable, CustomStringConvertible {
    /// The name or address, lowercased, without a trailing dot or IPv6 brackets.
    package let host: String
    /// Whether the names under ``host`` match too (written `*.host`).
    package let includesSubdomains: Bool

    /// A pattern the text can't be: why, in words.
    package struct Invalid: Error, Equatable, CustomStringConvertible {
        package let text: String
        package var description: String {
            "\"\(text)\" is not a host pattern: write a name (api.example.com), an IP address, or *.example.com"
        }
    }

    /// Parses one pattern. Case and one trailing dot are ignored (iOS 10.2+ hands PAC files names
    /// with one); only letters, digits, "-", "_", "." and an IPv6 address's ":" are taken, so a
    /// pattern can never break out of the script's strings.
    package init(_ text: String) throws(Invalid) {
        var body = Substring(text.lowercased())
        let wildcard = body.hasPrefix("*.")
        if wildcard { body = body.dropFirst(2) }
        if body.hasSuffix(".") { body = body.dropLast() }
        if body.hasPrefix("["), body.hasSuffix("]") { body = body.dropFirst().dropLast() }
        let allowed = body.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
            case UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: ":"): true
            default: false
            }
        }
        guard allowed, !body.isEmpty, !body.hasPrefix("."), !body.hasSuffix("."), !body.contains("..") else {
            throw Invalid(text: text)
        }
        host = String(body)
        includesSubdomains = wildcard
    }

    /// A comma-separated list ("a.example,*.b.example"); blanks around and between items are skipped.
    package static func list(_ text: String) throws(Invalid) -> [PACHostPattern] {
        var patterns: [PACHostPattern] = []
        for item in text.split(separator: ",") {
            let trimmed = item.trimmingBlanks
            if !trimmed.isEmpty { patterns.append(try PACHostPattern(trimmed)) }
        }
        return patterns
    }

    package var description: String { includesSubdomains ? "*." + host : host }
}

extension Substring {
    /// Without spaces and tabs at either end.
    var trimmingBlanks: String {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !blank($0) }), let last = lastIndex(where: { !blank($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
