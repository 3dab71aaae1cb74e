/// The host of one connection, normalised the way the ATS lookups need it.
///
/// Names are lowercased (the OS looks up exception keys with the lowercased request host, so an
/// upper-case key never matches; Apple: NSExceptionDomains; docs/ats-rules.md, "Settings") but keep a
/// trailing dot, which is significant for `NSExceptionDomains`. IPv6 literals lose their brackets
/// (RFC 3986 §3.2.2) and zone id (RFC 6874).
public enum HostIdentity: Sendable, Hashable, CustomStringConvertible {
    case name(String)
    case address(IPAddress)

    /// Why a string is not a host, for the CLI and the proxy's 400 responses.
    public enum ParseFailure: Error, Sendable, Equatable, CustomStringConvertible {
        case empty
        case invalidCharacter(Character)
        case unbalancedBracket
        case notAnAddressInBrackets(String)
        case tooLong(Int)
        case emptyLabel

        public var description: String {
            switch self {
            case .empty: "the host is empty"
            case .invalidCharacter(let character): "the host contains \"\(character)\", which no host name may contain"
            case .unbalancedBracket: "the host has an unbalanced \"[\" or \"]\""
            case .notAnAddressInBrackets(let text): "\"[\(text)]\" is not an IPv6 address"
            case .tooLong(let length): "the host is \(length) characters long; DNS names have at most 253"
            case .emptyLabel: "the host has an empty label (a leading dot, or two dots in a row)"
            }
        }
    }

    /// Parses a host as it appears in a URL or a CONNECT line, without a port.
    public init(parsing text: some StringProtocol) throws(ParseFailure) {
        let text = String(text)
        guard !text.isEmpty else { throw .empty }
        // The structural checks look at UTF-8 bytes: the Character views would run grapheme breaking
        // over every host of every request, and `[`, `]`, `:` are ASCII.
        let opens = text.utf8.first == UInt8(ascii: "[")
        let closes = text.utf8.last == UInt8(ascii: "]")
        if opens || closes {
            guard opens, closes, text.utf8.count > 2 else { throw .unbalancedBracket }
            let inner = String(text.dropFirst().dropLast())
            let withoutZone = inner.split(separator: "%", maxSplits: 1).first.map(String.init) ?? inner
            guard let address = IPAddress(withoutZone), !address.isIPv4 else { throw .notAnAddressInBrackets(inner) }
            self = .address(address)
            return
        }
        // A bare IPv6 literal, possibly with a zone id, as the CLI may be given one.
        if text.utf8.contains(UInt8(ascii: ":")) {
            let withoutZone = text.split(separator: "%", maxSplits: 1).first.map(String.init) ?? text
            if let address = IPAddress(withoutZone), !address.isIPv4 {
                self = .address(address)
                return
            }
            throw .invalidCharacter(":")
        }
        // Only digits and dots can make an IPv4 literal; skip the parse for every other name.
        if text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E }), let address = IPAddress(text) {
            self = .address(address)
            return
        }
        guard text.utf8.count <= 254 else { throw .tooLong(text.utf8.count) }
        // No empty label: no leading dot, no two dots in a row (a single trailing dot, the root, is fine).
        var previousWasDot = true
        for byte in text.utf8 {
            let isDot = byte == UInt8(ascii: ".")
            if isDot, previousWasDot { throw .emptyLabel }
            previousWasDot = isDot
        }
        if text.utf8.allSatisfy(HostIdentity.isPlainHostByte) {
            self = .name(HostIdentity.lowercase(text))
            return
        }
        // Internationalised names: letters and digits of any script (the OS would use punycode).
        for character in text {
            let allowed =
                character.isLetter || character.isNumber || character == "-" || character == "."
                || character == "_"
            if !allowed { throw .invalidCharacter(character) }
        }
        self = .name(HostIdentity.lowercase(text))
    }

    /// ASCII letters, digits, `-`, `.` and `_`: the fast path for host names.
    private static func isPlainHostByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x2E, 0x5F: true
        default: false
        }
    }

    /// The lowercased host, without copying when it is lowercase ASCII already (the common case,
    /// and the one the lookup benchmark measures).
    static func lowercase(_ text: String) -> String {
        if text.utf8.allSatisfy({ $0 < 0x80 && !($0 >= 0x41 && $0 <= 0x5A) }) { return text }
        return text.lowercased()
    }

    public var description: String {
        switch self {
        case .name(let name): name
        case .address(let address): address.description
        }
    }

    /// The host as it goes into a URL (`[…]` around IPv6).
    public var urlForm: String {
        switch self {
        case .name(let name): name
        case .address(.v6): "[\(self.description)]"
        case .address(let address): address.description
        }
    }

    /// A local name (Apple: NSAllowsLocalNetworking): no dot (a single trailing dot does not count) or ending in
    /// `.local`.
    public var isLocalName: Bool {
        guard case .name(let name) = self else { return false }
        // On UTF-8 bytes, as in `init(parsing:)`: names are lowercased and the markers are ASCII.
        var trimmed = name.utf8[...]
        if trimmed.last == UInt8(ascii: ".") { trimmed = trimmed.dropLast() }
        return !trimmed.contains(UInt8(ascii: ".")) || trimmed.suffix(6).elementsEqual(".local".utf8)
    }
}
