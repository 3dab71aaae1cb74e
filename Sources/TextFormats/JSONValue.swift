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
        case (.object(let a), .object(let b)):
            a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    /// The value of `key` in an object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let fields) = self else { return nil }
        return fields.first(where: { $0.0 == key })?.1
    }

    /// Compact JSON on one line.
    public var serialized: String { String(decoding: serializedBytes, as: UTF8.self) }

    /// Compact JSON on one line, as UTF-8: the log's hot path (one line per connection), written
    /// byte-wise with unescaped runs copied whole.
    public var serializedBytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(1024)
        writeCompact(to: &out)
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

    @usableFromInline func writeCompact(to out: inout [UInt8]) {
        switch self {
        case .null: JSONValue.writeNull(to: &out)
        case .bool(let value): out += value ? Self.trueBytes : Self.falseBytes
        case .int(let value): JSONValue.writeInt(value, to: &out)
        case .double(let value): out += value.isFinite ? Array(String(value).utf8) : Self.nullBytes
        case .string(let value): JSONValue.writeString(value, to: &out)
        case .array(let values):
            out.append(UInt8(ascii: "["))
            for (index, value) in values.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                value.writeCompact(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let fields):
            out.append(UInt8(ascii: "{"))
            for (index, field) in fields.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.writeString(field.0, to: &out)
                out.append(UInt8(ascii: ":"))
                field.1.writeCompact(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    @usableFromInline static func writeNull(to out: inout [UInt8]) { out += nullBytes }

    /// Decimal digits written in place: `String(value)` first would cost a string per number.
    @usableFromInline static func writeInt(_ value: Int64, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // room for UInt64.max's 20 digits
        withUnsafeMutableBytes(of: &digits) { buffer in
            var index = buffer.count
            repeat {
                index -= 1
                buffer[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            out.append(contentsOf: buffer[index...])
        }
    }

    private static let nullBytes = Array("null".utf8)
    private static let trueBytes = Array("true".utf8)
    private static let falseBytes = Array("false".utf8)

    /// The same escaping as the String writer, on UTF-8: runs of bytes that need none are copied
    /// at once. Escaped: `"`, `\`, C0 controls, DEL, and U+2028/U+2029 (E2 80 A8/A9), which
    /// JavaScript does not accept raw in strings.
    @usableFromInline static func writeString(_ value: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { bytes in
            var runStart = 0
            var index = 0
            while index < bytes.count {
                let byte = bytes[index]
                // Almost every byte of a log line needs no escape: those skip the switch below.
                if byte >= 0x20, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\"), byte != 0x7f, byte != 0xE2 {
                    index += 1
                    continue
                }
                var escape: [UInt8]?
                var width = 1
                switch byte {
                case UInt8(ascii: "\""): escape = Array("\\\"".utf8)
                case UInt8(ascii: "\\"): escape = Array("\\\\".utf8)
                case UInt8(ascii: "\n"): escape = Array("\\n".utf8)
                case UInt8(ascii: "\r"): escape = Array("\\r".utf8)
                case UInt8(ascii: "\t"): escape = Array("\\t".utf8)
                case 0..<0x20, 0x7f: escape = unicodeEscape(UInt32(byte))
                case 0xE2
                where index + 2 < bytes.count && bytes[index + 1] == 0x80
                    && (bytes[index + 2] == 0xA8 || bytes[index + 2] == 0xA9):
                    escape = unicodeEscape(bytes[index + 2] == 0xA8 ? 0x2028 : 0x2029)
                    width = 3
                default: break
                }
                if let escape {
                    out += UnsafeBufferPointer(rebasing: bytes[runStart..<index])
                    out += escape
                    runStart = index + width
                }
                index += width
            }
            out += UnsafeBufferPointer(rebasing: bytes[runStart..<bytes.count])
        }
        out.append(UInt8(ascii: "\""))
    }

    private static func unicodeEscape(_ value: UInt32) -> [UInt8] {
        let hex = String(value, radix: 16)
        return Array(("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).utf8)
    }

    /// Appends `value` as a JSON string literal (quoted and escaped) to `out`.
    public static func writeString(_ value: String, to out: inout String) {
        var bytes: [UInt8] = []
        writeString(value, to: &bytes)
        out += String(decoding: bytes, as: UTF8.self)
    }
}
