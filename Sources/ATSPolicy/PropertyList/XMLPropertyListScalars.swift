/// Text-to-value conversions for <integer>, <real>, <date> and <data>.
enum XMLScalar {
    /// Why a text is not a valid value; the parser adds the location.
    struct Invalid: Error {
        var reason: String
    }

    /// A decimal or `0x` hexadecimal integer with an optional sign. Values above `Int64.max`
    /// that fit in `UInt64` become `unsignedInteger`.
    static func integer(_ text: String) throws(Invalid) -> PropertyListValue {
        var digits = Substring(text)
        let isNegative = digits.first == "-"
        if isNegative || digits.first == "+" { digits = digits.dropFirst() }
        var radix: UInt32 = 10
        if digits.hasPrefix("0x") || digits.hasPrefix("0X") {
            radix = 16
            digits = digits.dropFirst(2)
        }
        let values = digits.utf8.map { XMLByte.digitValue($0, radix: radix) }
        guard !values.isEmpty, values.allSatisfy({ $0 != nil }) else {
            throw Invalid(reason: "invalid integer \"\(text)\"")
        }
        let outOfRange = Invalid(reason: "integer \(text) does not fit in 64 bits")
        var magnitude: UInt64 = 0
        for case let value? in values {
            let shifted = magnitude.multipliedReportingOverflow(by: UInt64(radix))
            let sum = shifted.partialValue.addingReportingOverflow(UInt64(value))
            guard !shifted.overflow, !sum.overflow else { throw outOfRange }
            magnitude = sum.partialValue
        }
        if isNegative {
            // Int64.min's magnitude, 2^63, is one more than Int64.max.
            guard magnitude <= UInt64(Int64.max) + 1 else { throw outOfRange }
            return .integer(magnitude == UInt64(Int64.max) + 1 ? .min : -Int64(magnitude))
        }
        return magnitude <= UInt64(Int64.max) ? .integer(Int64(magnitude)) : .unsignedInteger(magnitude)
    }

    /// A decimal number with optional fraction and exponent, or `nan`, `inf`, `-inf`
    /// (and the spellings CoreFoundation also accepts: `+inf`, `infinity`, any case).
    static func real(_ text: String) throws(Invalid) -> Double {
        switch text.lowercased() {
        case "nan": return .nan
        case "inf", "+inf", "infinity", "+infinity": return .infinity
        case "-inf", "-infinity": return -.infinity
        default: break
        }
        // Double(_:) also takes hexadecimal floats and other forms a plist never holds,
        // so check the decimal grammar first.
        guard isDecimalNumber(text), let value = Double(text) else {
            throw Invalid(reason: "invalid real \"\(text)\"")
        }
        return value
    }

    /// `[+-] (digits [. digits] | . digits) [(e|E) [+-] digits]`.
    private static func isDecimalNumber(_ text: String) -> Bool {
        var bytes = Substring(text).utf8[...]
        func skipSign() {
            if bytes.first == UInt8(ascii: "+") || bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        }
        func skipDigits() -> Int {
            let count = bytes.prefix(while: { XMLByte.digitValue($0, radix: 10) != nil }).count
            bytes = bytes.dropFirst(count)
            return count
        }
        skipSign()
        var mantissaDigits = skipDigits()
        if bytes.first == UInt8(ascii: ".") {
            bytes = bytes.dropFirst()
            mantissaDigits += skipDigits()
        }
        guard mantissaDigits > 0 else { return false }
        if bytes.first == UInt8(ascii: "e") || bytes.first == UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            skipSign()
            guard skipDigits() > 0 else { return false }
        }
        return bytes.isEmpty
    }

    /// `YYYY-MM-DDTHH:MM:SSZ` (UTC), as seconds since 1970-01-01T00:00:00Z.
    static func date(_ text: String) throws(Invalid) -> Double {
        let invalid = Invalid(reason: "invalid date \"\(text)\", expected YYYY-MM-DDTHH:MM:SSZ")
        let bytes = Array(text.utf8)
        let separators: [(index: Int, byte: UInt8)] = [
            (4, UInt8(ascii: "-")), (7, UInt8(ascii: "-")), (10, UInt8(ascii: "T")),
            (13, UInt8(ascii: ":")), (16, UInt8(ascii: ":")), (19, UInt8(ascii: "Z")),
        ]
        guard bytes.count == 20, separators.allSatisfy({ bytes[$0.index] == $0.byte }) else { throw invalid }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in bytes[range] {
                guard let digit = XMLByte.digitValue(byte, radix: 10) else { return nil }
                value = value * 10 + Int(digit)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            (1...12).contains(month), (1...daysInMonth(month, year: year)).contains(day),
            hour < 24, minute < 60, second < 60
        else { throw invalid }
        let days = daysSince1970(year: year, month: month, day: day)
        return Double(days * 86_400 + hour * 3_600 + minute * 60 + second)
    }

    private static func daysInMonth(_ month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's days_from_civil).
    private static func daysSince1970(year: Int, month: Int, day: Int) -> Int {
        let year = month <= 2 ? year - 1 : year
        let era = (year >= 0 ? year : year - 399) / 400
        let yearOfEra = year - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}

extension XMLScalar {
    /// Decodes standard base64 one character at a time, so the parser can point at the exact
    /// character that is wrong. Whitespace, including newlines, is skipped anywhere.
    struct Base64Decoder {
        private var bytes: [UInt8] = []
        /// The 6-bit values of the current group of four characters.
        private var group: UInt32 = 0
        private var groupLength = 0
        private var paddingInGroup = 0
        /// A group with padding ends the data.
        private var isFinished = false

        /// Takes one character; returns why it is invalid, or `nil`.
        mutating func consume(_ character: UInt8) -> String? {
            if XMLByte.isWhitespace(character) { return nil }
            if isFinished { return "base64 data continues after its '=' padding" }
            if character == UInt8(ascii: "=") {
                // Padding may only fill the last one or two characters of a group.
                guard groupLength >= 2 else { return "misplaced '=' in base64 data" }
                paddingInGroup += 1
                group <<= 6
            } else {
                guard let value = Self.value(of: character) else {
                    let shown = character < 0x80 ? String(UnicodeScalar(character)) : "non-ASCII character"
                    return "invalid character \"\(shown)\" in base64 data"
                }
                guard paddingInGroup == 0 else { return "misplaced '=' in base64 data" }
                group = group << 6 | value
            }
            groupLength += 1
            if groupLength == 4 {
                let decoded = [16, 8, 0].map { UInt8(truncatingIfNeeded: group >> $0) }
                bytes += decoded.prefix(3 - paddingInGroup)
                isFinished = paddingInGroup > 0
                group = 0
                groupLength = 0
                paddingInGroup = 0
            }
            return nil
        }

        /// The decoded bytes, or `nil` if the last group is incomplete.
        func finish() -> [UInt8]? {
            groupLength == 0 ? bytes : nil
        }

        private static func value(of character: UInt8) -> UInt32? {
            switch character {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): UInt32(character - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): UInt32(character - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(character - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "+"): 62
            case UInt8(ascii: "/"): 63
            default: nil
            }
        }
    }
}
