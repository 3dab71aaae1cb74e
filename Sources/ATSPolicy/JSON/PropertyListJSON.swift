import TextFormats

extension PropertyListValue {
    /// The value as JSON: dictionaries keep their order, data is Base64, dates are RFC 3339 strings.
    public var json: JSONValue {
        switch self {
        case .bool(let flag): .bool(flag)
        case .integer(let number): .int(number)
        case .unsignedInteger(let number): number <= UInt64(Int64.max) ? .int(Int64(number)) : .string(String(number))
        case .real(let number): .double(number)
        case .string(let text): .string(text)
        case .data(let bytes): .string(Base64.encode(bytes))
        case .date(let seconds): .string(DateFormat.rfc3339(Int64(seconds)))
        case .uid(let number): .int(Int64(truncatingIfNeeded: number))
        case .array(let items): .array(items.map(\.value.json))
        case .dictionary(let entries): .object(entries.map { ($0.key, $0.value.value.json) })
        }
    }
}
