import TextFormats

/// One value of a property list, XML or binary, with its location.
///
/// The parser keeps booleans and integers apart (Apple's ATS parser does: `<integer>1</integer>`
/// is not `<true/>` for every key) and keeps dictionary entries in file order with duplicates,
/// so `atsproxyctl check` can report what the file really says.
public struct PropertyListNode: Sendable, Equatable {
    public var value: PropertyListValue
    public var location: SourceLocation

    public init(_ value: PropertyListValue, at location: SourceLocation = .unknown) {
        self.value = value
        self.location = location
    }

    /// Equality ignores locations, so an XML file and its binary twin compare equal.
    public static func == (lhs: PropertyListNode, rhs: PropertyListNode) -> Bool {
        lhs.value == rhs.value
    }
}

/// A dictionary entry: key and value, each with its own location.
public struct PropertyListEntry: Sendable, Equatable {
    public var key: String
    public var keyLocation: SourceLocation
    public var value: PropertyListNode

    public init(key: String, keyLocation: SourceLocation = .unknown, value: PropertyListNode) {
        self.key = key
        self.keyLocation = keyLocation
        self.value = value
    }

    public static func == (lhs: PropertyListEntry, rhs: PropertyListEntry) -> Bool {
        lhs.key == rhs.key && lhs.value == rhs.value
    }
}

public enum PropertyListValue: Sendable, Equatable {
    case bool(Bool)
    /// Integers up to 64 bits signed; binary plists may hold unsigned 64-bit values,
    /// which are kept in `unsignedInteger` when they do not fit.
    case integer(Int64)
    case unsignedInteger(UInt64)
    case real(Double)
    case string(String)
    case data([UInt8])
    /// Seconds since 1970-01-01T00:00:00Z.
    case date(Double)
    case array([PropertyListNode])
    /// Entries in file order. Duplicate keys are kept; ``PropertyListValue/lookup(_:)``
    /// returns the last one, as CoreFoundation's parser keeps the last value.
    case dictionary([PropertyListEntry])
    /// A binary-plist UID (keyed archives only); never valid in an Info.plist.
    case uid(UInt64)

    /// The plist type name, as the user wrote it in XML (`string`, `true`/`false` is `boolean`).
    public var typeName: String {
        switch self {
        case .bool: "boolean"
        case .integer, .unsignedInteger: "integer"
        case .real: "real"
        case .string: "string"
        case .data: "data"
        case .date: "date"
        case .array: "array"
        case .dictionary: "dictionary"
        case .uid: "UID"
        }
    }

    /// `a string`, `an array`…: for sentences.
    public var typeNameWithArticle: String {
        let name = typeName
        return (["a", "e", "i", "o", "u"].contains(name.prefix(1)) ? "an " : "a ") + name
    }

    /// The value for `key` in a dictionary (the last one when the key repeats).
    public func lookup(_ key: String) -> PropertyListEntry? {
        guard case .dictionary(let entries) = self else { return nil }
        return entries.last(where: { $0.key == key })
    }
}
