import Glibc

/// Dates as the pages show them, without Foundation.
enum UTCDate {
    /// "2036-11-22" for `seconds` since 1970, in UTC.
    static func day(_ seconds: Int64) -> String {
        var time = time_t(seconds)
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else { return "?" }
        let year = Int(parts.tm_year) + 1900
        let month = Int(parts.tm_mon) + 1
        let day = Int(parts.tm_mday)
        return "\(year)-\(month < 10 ? "0" : "")\(month)-\(day < 10 ? "0" : "")\(day)"
    }
}
