/// Byte classes and small helpers shared by the HTTP/1.1 parsers.
///
/// Everything works on bytes, never on `Character`s: HTTP/1.1 is defined over octets
/// (RFC 9112 §2.2), and grapheme clustering would merge a CR with the LF after it.
enum HTTPSyntax {
    static let carriageReturn = UInt8(ascii: "\r")
    static let lineFeed = UInt8(ascii: "\n")
    static let space = UInt8(ascii: " ")
    static let horizontalTab = UInt8(ascii: "\t")
    static let colon = UInt8(ascii: ":")

    /// The capacity the head scanners give a line's buffer when it first needs one: room for a
    /// typical request line or field line, so that it is allocated once instead of growing from
    /// 16 bytes by doubling.
    static let lineBufferCapacity = 128

    /// tchar (RFC 9110 §5.6.2): the characters of methods, field names and transfer codings.
    static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// token = 1*tchar
    static func isToken(_ text: some StringProtocol) -> Bool {
        !text.utf8.isEmpty && text.utf8.allSatisfy(isTokenCharacter)
    }

    /// VCHAR (RFC 5234 appendix B.1): printable US-ASCII, no space.
    static func isVisible(_ byte: UInt8) -> Bool {
        byte >= 0x21 && byte <= 0x7E
    }

    /// SP or HTAB: OWS, RWS and BWS are made of these (RFC 9110 §5.6.3).
    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == space || byte == horizontalTab
    }

    /// field-vchar, SP or HTAB (RFC 9110 §5.5). obs-text (0x80–0xFF) is allowed because real
    /// servers still send Latin-1 and UTF-8 in values; every other control character is not.
    static func isFieldValueCharacter(_ byte: UInt8) -> Bool {
        isWhitespace(byte) || isVisible(byte) || byte >= 0x80
    }

    static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    static func isLetter(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
    }

    /// ASCII-only lowercasing: field names, schemes and hosts are case-insensitive ASCII, and
    /// `String.lowercased()` would also fold non-ASCII letters.
    static func lowercased(_ text: some StringProtocol) -> String {
        String(decoding: text.utf8.map(lowercased), as: UTF8.self)
    }

    /// `bytes` lowercased (ASCII only) as a String, built in place rather than through an
    /// intermediate array. Bytes that are not UTF-8 are repaired, as `String(decoding:)` does.
    static func lowercasedText(_ bytes: ArraySlice<UInt8>) -> String {
        String(unsafeUninitializedCapacity: bytes.count) { buffer in
            var count = 0
            for byte in bytes {
                buffer[count] = lowercased(byte)
                count += 1
            }
            return count
        }
    }

    static func equalsIgnoringCase(_ left: some StringProtocol, _ right: some StringProtocol) -> Bool {
        left.utf8.count == right.utf8.count
            && zip(left.utf8, right.utf8).allSatisfy { lowercased($0) == lowercased($1) }
    }

    /// Removes leading and trailing SP/HTAB (OWS).
    static func trimmingWhitespace(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var slice = bytes
        while let first = slice.first, isWhitespace(first) { slice = slice.dropFirst() }
        while let last = slice.last, isWhitespace(last) { slice = slice.dropLast() }
        return slice
    }

    /// Splits a list-valued field (RFC 9110 §5.6.1) at commas, trimming OWS around each element.
    /// Empty elements are kept so callers decide whether they are an error.
    static func listElements(_ value: some Collection<UInt8>) -> [ArraySlice<UInt8>] {
        Array(value).split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false).map(trimmingWhitespace)
    }

    /// Shows a byte in a reason sentence: printable ASCII as itself, anything else as 0xNN.
    static func describe(_ byte: UInt8) -> String {
        if isVisible(byte) { return "'\(String(decoding: [byte], as: UTF8.self))'" }
        let digits = Array("0123456789ABCDEF".utf8)
        return "0x" + String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]], as: UTF8.self)
    }
}
