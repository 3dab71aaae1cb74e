extension JSONValue {
    /// Parses one JSON text (RFC 8259, strictly) from UTF-8 bytes.
    ///
    /// - Objects keep their members in input order, duplicates included: `{"a":1,"a":2}` is
    ///   `.object([("a", 1), ("a", 2)])`. Nothing is lost, and the `key` subscript answers with
    ///   the first one; a reader that cares about duplicates can see them.
    /// - Numbers without a fraction or exponent that fit `Int64` are `.int` (`-0` is `.int(0)`);
    ///   every other number is `.double`, correctly rounded. A number too large for a `Double`
    ///   is an error, not infinity.
    /// - No extensions: no comments, trailing commas, leading zeros, `NaN`, single quotes or
    ///   byte order mark. Strings must be valid UTF-8 without raw control characters, and `\u`
    ///   escapes must pair their surrogates.
    /// - Containers nest at most 512 deep. The parser keeps its own stack rather than recursing,
    ///   so hostile input (100,000 `[`s) gets an error, not a stack overflow.
    public init(parsing bytes: some Collection<UInt8>) throws(JSONParseError) {
        // withContiguousStorageIfAvailable rethrows untyped, so the result comes out as a Result.
        let result =
            bytes.withContiguousStorageIfAvailable { JSONParser.parse($0) }
            ?? Array(bytes).withUnsafeBufferPointer { JSONParser.parse($0) }
        self = try result.get()
    }

    /// Parses one JSON text from a string, as the byte initialiser does.
    public init(parsing text: String) throws(JSONParseError) {
        var text = text
        self = try text.withUTF8 { JSONParser.parse($0) }.get()
    }
}

/// A one-pass JSON parser over a byte buffer.
///
/// `atsproxyctl report` feeds it logs of many megabytes, so the hot paths work on bytes: string
/// runs without escapes become a `String` in one copy, only strings with escapes go through a
/// scratch buffer, and only strings with non-ASCII bytes are checked for UTF-8. Line and column
/// are worked out only when there is an error to report.
struct JSONParser {
    /// Deeper nesting is an error. Real documents never come close; the limit only bounds the
    /// memory hostile input can make the parser's stack use.
    static let maximumDepth = 512

    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0
    /// Decoded bytes of the current string when it has escapes; reused from string to string.
    private var scratch: [UInt8] = []

    private init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Result<JSONValue, JSONParseError> {
        var parser = JSONParser(bytes: bytes)
        do {
            return .success(try parser.parseDocument())
        } catch {
            return .failure(error)
        }
    }

    private mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        let value = try parseValue()
        skipWhitespace()
        guard position == bytes.count else { throw error("trailing characters after the value", at: position) }
        return value
    }

    // MARK: - Structure

    private enum Container {
        case array
        case object
    }

    /// One value, containers included, without recursion: open containers live on explicit
    /// stacks so depth costs heap, not call frames.
    private mutating func parseValue() throws(JSONParseError) -> JSONValue {
        var containers: [Container] = []
        // Elements and members gathered so far, one entry per open array or object. Separate
        // stacks (rather than an enum with payloads) let `append` work in place on the top.
        var arrays: [[JSONValue]] = []
        var objects: [[(String, JSONValue)]] = []
        var keys: [String] = []

        parsing: while true {
            skipWhitespace()
            guard position < bytes.count else { throw unexpected("a value") }
            var value: JSONValue
            switch bytes[position] {
            case UInt8(ascii: "{"):
                guard containers.count < Self.maximumDepth else {
                    throw error("nesting deeper than \(Self.maximumDepth)", at: position)
                }
                position += 1
                skipWhitespace()
                if position < bytes.count && bytes[position] == UInt8(ascii: "}") {
                    position += 1
                    value = .object([])
                } else {
                    keys.append(try parseKey())
                    objects.append([])
                    containers.append(.object)
                    continue parsing
                }
            case UInt8(ascii: "["):
                guard containers.count < Self.maximumDepth else {
                    throw error("nesting deeper than \(Self.maximumDepth)", at: position)
                }
                position += 1
                skipWhitespace()
                if position < bytes.count && bytes[position] == UInt8(ascii: "]") {
                    position += 1
                    value = .array([])
                } else {
                    arrays.append([])
                    containers.append(.array)
                    continue parsing
                }
            case UInt8(ascii: "\""):
                value = .string(try parseString())
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                value = try parseNumber()
            case UInt8(ascii: "t"):
                try expectLiteral("true")
                value = .bool(true)
            case UInt8(ascii: "f"):
                try expectLiteral("false")
                value = .bool(false)
            case UInt8(ascii: "n"):
                try expectLiteral("null")
                value = .null
            default:
                throw unexpected("a value")
            }

            // The value is complete: add it to the innermost container, and close every
            // container that ends right after it.
            while let container = containers.last {
                skipWhitespace()
                let next = position < bytes.count ? bytes[position] : nil
                switch container {
                case .array:
                    arrays[arrays.count - 1].append(value)
                    if next == UInt8(ascii: ",") {
                        position += 1
                        try rejectTrailingComma(before: UInt8(ascii: "]"))
                        continue parsing
                    }
                    guard next == UInt8(ascii: "]") else { throw unexpected("',' or ']' after array element") }
                    value = .array(arrays.removeLast())
                case .object:
                    objects[objects.count - 1].append((keys.removeLast(), value))
                    if next == UInt8(ascii: ",") {
                        position += 1
                        try rejectTrailingComma(before: UInt8(ascii: "}"))
                        keys.append(try parseKey())
                        continue parsing
                    }
                    guard next == UInt8(ascii: "}") else { throw unexpected("',' or '}' after object member") }
                    value = .object(objects.removeLast())
                }
                position += 1
                containers.removeLast()
            }
            return value
        }
    }

    /// `"key" :`, leaving the position at the member's value.
    private mutating func parseKey() throws(JSONParseError) -> String {
        skipWhitespace()
        guard position < bytes.count && bytes[position] == UInt8(ascii: "\"") else {
            throw unexpected("a string key")
        }
        let key = try parseString()
        skipWhitespace()
        guard position < bytes.count && bytes[position] == UInt8(ascii: ":") else {
            throw unexpected("':' after object key")
        }
        position += 1
        return key
    }

    /// A comma followed by the closing bracket gets its own message: it is the most common
    /// mistake in hand-edited JSON, and "expected a value, found ']'" does not name it.
    private mutating func rejectTrailingComma(before close: UInt8) throws(JSONParseError) {
        skipWhitespace()
        if position < bytes.count && bytes[position] == close {
            throw error("trailing comma before '\(Character(Unicode.Scalar(close)))'", at: position)
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        let matches =
            position + count <= bytes.count
            && (0..<count).allSatisfy { bytes[position + $0] == literal.utf8Start[$0] }
        guard matches else { throw error("invalid literal, expected '\(literal)'", at: position) }
        position += count
    }

    @inline(__always)
    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"): position += 1
            default: return
            }
        }
    }

    // MARK: - Strings

    /// A string, from its opening quote to just past its closing one.
    private mutating func parseString() throws(JSONParseError) -> String {
        let start = position
        position += 1
        var runStart = position
        var hasEscapes = false
        // The OR of every byte, so that all-ASCII strings (nearly all of them in a log) skip
        // UTF-8 validation.
        var highBits: UInt8 = 0
        while true {
            // The hot loop: find the end of the run that can be copied as it is.
            while position < bytes.count {
                let byte = bytes[position]
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { break }
                highBits |= byte
                position += 1
            }
            guard position < bytes.count else { throw error("unterminated string", at: start) }
            let run = UnsafeBufferPointer(rebasing: bytes[runStart..<position])
            switch bytes[position] {
            case UInt8(ascii: "\""):
                // Escapes decode to valid UTF-8 (lone surrogates are rejected), so checking the
                // raw bytes checks the decoded string too, and an error can point at its byte.
                if highBits >= 0x80, let bad = firstInvalidUTF8(from: start + 1, to: position) {
                    throw error("invalid UTF-8", at: bad)
                }
                position += 1
                // String(decoding:) is specialised for UTF8 and copies in one go; the generic
                // String(validating:as:) looked up type metadata on every call, a quarter of
                // the parse time on logs.
                if !hasEscapes { return String(decoding: run, as: UTF8.self) }
                scratch.append(contentsOf: run)
                return String(decoding: scratch, as: UTF8.self)
            case UInt8(ascii: "\\"):
                if !hasEscapes {
                    scratch.removeAll(keepingCapacity: true)
                    hasEscapes = true
                }
                scratch.append(contentsOf: run)
                try parseEscape(stringStart: start)
                runStart = position
            case UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                // Most likely a missing closing quote, so say that and point at the string's start.
                throw error("unterminated string (line break before the closing quote)", at: start)
            default:
                throw error("unescaped control character \(Self.codePoint(bytes[position])) in string", at: position)
            }
        }
    }

    /// The offset of the first byte in `start..<end` that does not begin a well-formed UTF-8
    /// sequence (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), or `nil`.
    private func firstInvalidUTF8(from start: Int, to end: Int) -> Int? {
        var offset = start
        while offset < end {
            let lead = bytes[offset]
            if lead < 0x80 {
                offset += 1
                continue
            }
            // The sequence's width and the range its second byte must fall in.
            let width: Int
            let second: ClosedRange<UInt8>
            switch lead {
            case 0xC2...0xDF: (width, second) = (2, 0x80...0xBF)
            case 0xE0: (width, second) = (3, 0xA0...0xBF)
            case 0xE1...0xEC, 0xEE...0xEF: (width, second) = (3, 0x80...0xBF)
            case 0xED: (width, second) = (3, 0x80...0x9F)
            case 0xF0: (width, second) = (4, 0x90...0xBF)
            case 0xF1...0xF3: (width, second) = (4, 0x80...0xBF)
            case 0xF4: (width, second) = (4, 0x80...0x8F)
            default: return offset
            }
            guard offset + width <= end, second.contains(bytes[offset + 1]) else { return offset }
            for index in offset + 2..<offset + width where bytes[index] & 0xC0 != 0x80 { return offset }
            offset += width
        }
        return nil
    }

    /// One escape sequence, from its backslash; its decoded UTF-8 goes to `scratch`.
    private mutating func parseEscape(stringStart: Int) throws(JSONParseError) {
        let start = position
        guard position + 1 < bytes.count else { throw error("unterminated string", at: stringStart) }
        let kind = bytes[position + 1]
        position += 2
        switch kind {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scratch.append(kind)
        case UInt8(ascii: "b"): scratch.append(0x08)
        case UInt8(ascii: "f"): scratch.append(0x0C)
        case UInt8(ascii: "n"): scratch.append(0x0A)
        case UInt8(ascii: "r"): scratch.append(0x0D)
        case UInt8(ascii: "t"): scratch.append(0x09)
        case UInt8(ascii: "u"):
            guard let unit = hexQuad(at: position) else {
                throw error("invalid \\u escape, expected four hex digits", at: start)
            }
            position += 4
            var scalar = unit
            switch unit {
            case 0xD800...0xDBFF:
                // A high surrogate must be followed at once by an escaped low one.
                guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"),
                    bytes[position + 1] == UInt8(ascii: "u"), let low = hexQuad(at: position + 2),
                    (0xDC00...0xDFFF).contains(low)
                else {
                    throw error(
                        "lone surrogate \\u\(Self.hex(unit)) (a high surrogate needs a low one after it)", at: start)
                }
                position += 6
                scalar = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
            case 0xDC00...0xDFFF:
                throw error(
                    "lone surrogate \\u\(Self.hex(unit)) (a low surrogate needs a high one before it)", at: start)
            default:
                break
            }
            appendUTF8(scalar)
        default:
            let shown =
                (0x21..<0x7F).contains(kind)
                ? "\\\(Character(Unicode.Scalar(kind)))" : "(backslash followed by \(Self.codePoint(kind)))"
            throw error("invalid escape \(shown)", at: start)
        }
    }

    /// The value of four hex digits at `offset`, or `nil`.
    private func hexQuad(at offset: Int) -> UInt32? {
        guard offset + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for byte in bytes[offset..<offset + 4] {
            guard let digit = HexDigit.value(byte) else { return nil }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    /// Appends a scalar value (never a surrogate) as UTF-8.
    private mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case ..<0x80:
            scratch.append(UInt8(scalar))
        case ..<0x800:
            scratch.append(0xC0 | UInt8(scalar >> 6))
            scratch.append(0x80 | UInt8(scalar & 0x3F))
        case ..<0x10000:
            scratch.append(0xE0 | UInt8(scalar >> 12))
            scratch.append(0x80 | UInt8(scalar >> 6 & 0x3F))
            scratch.append(0x80 | UInt8(scalar & 0x3F))
        default:
            scratch.append(0xF0 | UInt8(scalar >> 18))
            scratch.append(0x80 | UInt8(scalar >> 12 & 0x3F))
            scratch.append(0x80 | UInt8(scalar >> 6 & 0x3F))
            scratch.append(0x80 | UInt8(scalar & 0x3F))
        }
    }

    // MARK: - Numbers

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    private mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = position
        let negative = bytes[position] == UInt8(ascii: "-")
        if negative { position += 1 }
        guard position < bytes.count, Self.isDigit(bytes[position]) else {
            throw unexpected("a digit after '-'")
        }
        // Accumulated as a negative number, whose range includes Int64.min.
        var magnitude: Int64 = 0
        var fitsInt64 = true
        if bytes[position] == UInt8(ascii: "0") {
            position += 1
            if position < bytes.count && Self.isDigit(bytes[position]) {
                throw error("leading zeros are not allowed", at: start)
            }
        } else {
            while position < bytes.count && Self.isDigit(bytes[position]) {
                let digit = Int64(bytes[position] - UInt8(ascii: "0"))
                let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
                let (next, overflow2) = times10.subtractingReportingOverflow(digit)
                if overflow1 || overflow2 { fitsInt64 = false }
                magnitude = next
                position += 1
            }
        }
        var isInteger = true
        if position < bytes.count && bytes[position] == UInt8(ascii: ".") {
            isInteger = false
            position += 1
            guard position < bytes.count && Self.isDigit(bytes[position]) else {
                throw unexpected("a digit after the decimal point")
            }
            skipDigits()
        }
        if position < bytes.count && (bytes[position] | 0x20) == UInt8(ascii: "e") {
            isInteger = false
            position += 1
            if position < bytes.count && (bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-"))
            {
                position += 1
            }
            guard position < bytes.count && Self.isDigit(bytes[position]) else {
                throw unexpected("a digit in the exponent")
            }
            skipDigits()
        }
        if isInteger && fitsInt64 {
            if negative { return .int(magnitude) }
            if magnitude != .min { return .int(-magnitude) }
        }
        // The slice has been checked against the grammar above, which Double(String) accepts
        // as decimal; it rounds correctly, so no digits are lost to a hand-made conversion.
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
        guard let value = Double(text), value.isFinite else { throw error("number out of range", at: start) }
        return .double(value)
    }

    private mutating func skipDigits() {
        while position < bytes.count && Self.isDigit(bytes[position]) { position += 1 }
    }

    @inline(__always)
    private static func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

    // MARK: - Errors

    private func error(_ reason: String, at offset: Int) -> JSONParseError {
        JSONParseError(reason, at: offset, in: bytes)
    }

    /// "expected X, found Y" at the current position; bytes that are not UTF-8 get that
    /// reason instead, as it is the one to fix.
    private func unexpected(_ expected: String) -> JSONParseError {
        guard position < bytes.count else { return error("expected \(expected), found end of input", at: position) }
        let byte = bytes[position]
        let found: String
        switch byte {
        case 0x20..<0x7F:
            found = "'\(Character(Unicode.Scalar(byte)))'"
        case ..<0x80:
            found = Self.codePoint(byte)
        default:
            var iterator = UnsafeBufferPointer(rebasing: bytes[position...]).makeIterator()
            var decoder = UTF8()
            guard case .scalarValue(let scalar) = decoder.decode(&iterator) else {
                return error("invalid UTF-8", at: position)
            }
            found = scalar == "\u{FEFF}" ? "a byte order mark" : "'\(scalar)' (\(Self.codePoint(scalar.value)))"
        }
        return error("expected \(expected), found \(found)", at: position)
    }

    private static func codePoint(_ value: some BinaryInteger) -> String { "U+" + hex(value) }

    /// At least four uppercase hex digits, as code points and `\u` escapes are written.
    private static func hex(_ value: some BinaryInteger) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
