/// RFC 3339 timestamps from seconds since 1970, without Foundation's formatters (which are slow to
/// create and locale-sensitive). Civil-from-days after Howard Hinnant's algorithm.
public enum DateFormat {
    /// `2026-11-21T13:05:09Z`.
    public static func rfc3339(_ seconds: Int64) -> String {
        let (year, month, day) = civil(days: floorDivide(seconds, 86_400))
        let secondOfDay = seconds - floorDivide(seconds, 86_400) * 86_400
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(Int(secondOfDay / 3600), 2)):"
            + "\(pad(Int(secondOfDay / 60 % 60), 2)):\(pad(Int(secondOfDay % 60), 2))Z"
    }

    /// `2026-11-21T13:05:09.042Z`: log timestamps, with milliseconds.
    public static func rfc3339(milliseconds: Int64) -> String {
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        let fraction = Int(milliseconds - seconds * 1000)
        return String(rfc3339(seconds).dropLast()) + "." + pad(fraction, 3) + "Z"
    }

    /// `2026-11-21`.
    public static func day(_ seconds: Int64) -> String { String(rfc3339(seconds).prefix(10)) }

    /// Seconds since 1970 for a UTC calendar date and time.
    public static func seconds(year: Int, month: Int, day: Int, hour: Int = 0, minute: Int = 0, second: Int = 0) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let monthIndex = month > 2 ? month - 3 : month + 9
        let dayOfYear = (153 * monthIndex + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = Int64(era) * 146_097 + Int64(dayOfEra) - 719_468
        return days * 86_400 + Int64(hour * 3600 + minute * 60 + second)
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

    private static func pad(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }
}
