/// RFC 3339 timestamps from seconds since 1970, without Foundation's formatters (which are slow to
/// create and locale-sensitive). Civil-from-days after Howard Hinnant's algorithm.
public enum DateFormat {
    /// `2026-11-21T13:05:09Z`.
    public static func rfc3339(_ seconds: Int64) -> String { format(seconds: seconds, milliseconds: nil) }

    /// `2026-11-21T13:05:09.042Z`: log timestamps, with milliseconds.
    public static func rfc3339(milliseconds: Int64) -> String {
        let seconds = floorDivide(milliseconds, 1000)
        return format(seconds: seconds, milliseconds: Int(milliseconds - seconds * 1000))
    }

    /// `2026-11-21`.
    public static func day(_ seconds: Int64) -> String { String(rfc3339(seconds).prefix(10)) }

    /// Seconds since 1970 for a UTC calendar date and time.
    public static func seconds(year: Int, month: Int, day: Int, hour: Int = 0, minute: Int = 0, second: Int = 0)
        -> Int64
    {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let monthIndex = month > 2 ? month - 3 : month + 9
        let dayOfYear = (153 * monthIndex + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = Int64(era) * 146_097 + Int64(dayOfEra) - 719_468
        return days * 86_400 + Int64(hour * 3600 + minute * 60 + second)
    }

    /// Seconds since 1970 for an RFC 3339 timestamp (`2026-11-27T12:00:00Z`, `…+01:00`, with or
    /// without fractional seconds, which are dropped) or a bare date (`2026-11-27`, midnight UTC); nil
    /// when the text is neither.
    public static func parseRFC3339(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= bytes.count, !range.isEmpty else { return nil }
            var value = 0
            for byte in bytes[range] {
                guard (48...57).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
        func at(_ index: Int, _ character: Character) -> Bool {
            index < bytes.count && bytes[index] == character.asciiValue!
        }
        guard let year = number(0..<4), at(4, "-"), let month = number(5..<7), at(7, "-"), let day = number(8..<10),
            (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        let date = seconds(year: year, month: month, day: day)
        // The day must exist: 2026-02-30 comes back as another date.
        guard civil(days: floorDivide(date, 86_400)) == (year, month, day) else { return nil }
        if bytes.count == 10 { return date }
        guard at(10, "T") || at(10, "t") || at(10, " "), let hour = number(11..<13), at(13, ":"),
            let minute = number(14..<16), at(16, ":"), let second = number(17..<19), hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        if at(index, ".") {
            index += 1
            let start = index
            while index < bytes.count, (48...57).contains(bytes[index]) { index += 1 }
            guard index > start else { return nil }
        }
        var offset = 0
        if at(index, "Z") || at(index, "z") {
            index += 1
        } else if at(index, "+") || at(index, "-") {
            guard let hours = number(index + 1..<index + 3), at(index + 3, ":"),
                let minutes = number(index + 4..<index + 6), hours < 24, minutes < 60
            else { return nil }
            offset = (hours * 3600 + minutes * 60) * (at(index, "-") ? -1 : 1)
            index += 6
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }
        return date + Int64(hour * 3600 + minute * 60 + second - offset)
    }

    /// Whole calendar months from `start` to `end` (UTC): 2021-01-31 to 2021-02-28 is 0, to 2021-03-01
    /// is 1. Apple's older CT table counts a certificate's lifetime in months (HT205280).
    public static func fullMonths(from start: Int64, to end: Int64) -> Int {
        let (startYear, startMonth, startDay) = civil(days: floorDivide(start, 86_400))
        let (endYear, endMonth, endDay) = civil(days: floorDivide(end, 86_400))
        var months = (endYear - startYear) * 12 + (endMonth - startMonth)
        let startInMonth = Int64(startDay) * 86_400 + (start - floorDivide(start, 86_400) * 86_400)
        let endInMonth = Int64(endDay) * 86_400 + (end - floorDivide(end, 86_400) * 86_400)
        if endInMonth < startInMonth { months -= 1 }
        return months
    }

    private static func civil(days: Int64) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (Int(year), Int(month), Int(day))
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
        a >= 0 ? a / b : (a - b + 1) / b
    }

    /// Digits written straight into the string's storage: every log line carries a timestamp and
    /// each certificate two, so this runs several times per connection.
    private static func format(seconds: Int64, milliseconds: Int?) -> String {
        let (year, month, day) = civil(days: floorDivide(seconds, 86_400))
        let secondOfDay = Int(seconds - floorDivide(seconds, 86_400) * 86_400)
        // Years outside 0...9999 (never in a certificate or a clock) would not fit four digits.
        guard (0...9999).contains(year) else {
            let time = format(seconds: Int64(secondOfDay), milliseconds: milliseconds).dropFirst(10)
            return "\(year)-\(month < 10 ? "0" : "")\(month)-\(day < 10 ? "0" : "")\(day)" + time
        }
        let length = milliseconds == nil ? 20 : 24
        return String(unsafeUninitializedCapacity: length) { buffer in
            var index = 0
            func put(_ value: Int, digits: Int) {
                var value = value
                for offset in stride(from: digits - 1, through: 0, by: -1) {
                    buffer[index + offset] = UInt8(ascii: "0") + UInt8(value % 10)
                    value /= 10
                }
                index += digits
            }
            func put(_ character: Unicode.Scalar) {
                buffer[index] = UInt8(ascii: character)
                index += 1
            }
            put(year, digits: 4)
            put("-")
            put(month, digits: 2)
            put("-")
            put(day, digits: 2)
            put("T")
            put(secondOfDay / 3600, digits: 2)
            put(":")
            put(secondOfDay / 60 % 60, digits: 2)
            put(":")
            put(secondOfDay % 60, digits: 2)
            if let milliseconds {
                put(".")
                put(milliseconds, digits: 3)
            }
            put("Z")
            return index
        }
    }
}
