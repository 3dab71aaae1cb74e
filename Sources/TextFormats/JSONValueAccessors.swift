// Typed views of a JSONValue for readers (`atsproxyctl status`, `report`): each is `nil` when
// the value is of another kind, so a reader can `guard let` its way through a document and
// report the field that is missing or mistyped.

extension JSONValue {
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// Only `.int`: a `.double` with an integral value is not converted, since the writer meant
    /// a fraction there (atsproxy writes counters as integers).
    public var intValue: Int64? {
        if case .int(let value) = self { return value }
        return nil
    }

    /// Either kind of number: JSON has one number type, and a writer in another language may
    /// well write `2` where a fraction could have been.
    public var doubleValue: Double? {
        switch self {
        case .double(let value): value
        case .int(let value): Double(value)
        default: nil
        }
    }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let values) = self { return values }
        return nil
    }

    /// The members in input order, duplicates included.
    public var objectValue: [(String, JSONValue)]? {
        if case .object(let fields) = self { return fields }
        return nil
    }

    /// The element at `index` of an array, `nil` for other values and out-of-range indices.
    public subscript(index: Int) -> JSONValue? {
        guard case .array(let values) = self, values.indices.contains(index) else { return nil }
        return values[index]
    }
}
