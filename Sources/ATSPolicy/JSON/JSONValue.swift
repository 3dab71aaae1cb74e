/// A JSON value with keys kept in the order they were written, so every JSON line atsproxy prints
/// (explain, check, the proxy's log) has a stable, readable field order. Serialising by hand also
/// keeps the policy module free of Foundation's JSONSerialization, whose key order is unspecified.
public enum JSONValue: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByNilLiteral
{
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(Int64(value)) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(nilLiteral: ()) { self = .null }

    public static func optional(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
    public static func int(_ value: Int) -> JSONValue { .int(Int64(value)) }
    public static func strings(_ values: [String]) -> JSONValue { .array(values.map(JSONValue.string)) }

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.int(let a), .int(let b)): a == b
        case (.double(let a), .double(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    /// The value of `key` in an object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let fields) = self else { return nil }
        return fields.first(where: { $0.0 == key })?.1
    }

    /// Compact JSON on one line.
    public var serialized: String {
        var out = ""
        write(to: &out, indent: nil, depth: 0)
        return out
    }

    /// Indented JSON for people.
    public var prettyPrinted: String {
        var out = ""
        write(to: &out, indent: "  ", depth: 0)
        return out
    }

    private func write(to out: inout String, indent: String?, depth: Int) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .int(let value): out += String(value)
        case .double(let value): out += value.isFinite ? String(value) : "null"
        case .string(let value): JSONValue.writeString(value, to: &out)
        case .array(let values):
            writeContainer(values, open: "[", close: "]", to: &out, indent: indent, depth: depth) { value, out in
                value.write(to: &out, indent: indent, depth: depth + 1)
            }
        case .object(let fields):
            writeContainer(fields, open: "{", close: "}", to: &out, indent: indent, depth: depth) { field, out in
                JSONValue.writeString(field.0, to: &out)
                out += indent == nil ? ":" : ": "
                field.1.write(to: &out, indent: indent, depth: depth + 1)
            }
        }
    }

    private func writeContainer<Element>(
        _ elements: [Element], open: String, close: String, to out: inout String, indent: String?, depth: Int,
        _ writeElement: (Element, inout String) -> Void
    ) {
        out += open
        guard !elements.isEmpty else {
            out += close
            return
        }
        for (index, element) in elements.enumerated() {
            if index > 0 { out += "," }
            if let indent { out += "\n" + String(repeating: indent, count: depth + 1) }
            writeElement(element, &out)
        }
        if let indent { out += "\n" + String(repeating: indent, count: depth) }
        out += close
    }

    static func writeString(_ value: String, to out: inout String) {
        out += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7f || scalar.value == 0x2028 || scalar.value == 0x2029:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
