import TextFormats

/// A field name of a log line (or of an object inside one): the enum's raw value is the key as
/// written and read, so the writer and its readers cannot spell it differently.
@usableFromInline
package protocol LogField: RawRepresentable, CaseIterable, Sendable, Hashable where RawValue == String {}

extension JSONValue {
    /// The member named by `field`, or nil when absent (or when this is not an object).
    package subscript<Field: LogField>(field: Field) -> JSONValue? { self[field.rawValue] }
}

extension JSONObjectSink {
    /// The sink's members keyed by a log field rather than by a literal (`nil` is `null`). Inlinable,
    /// so each writer is specialised where it is used: through generic witnesses, every field of
    /// every log line paid two indirect calls.
    @inlinable package mutating func add<Field: LogField>(_ field: Field, _ value: JSONValue?) {
        add(field.rawValue, value)
    }
    @inlinable package mutating func add<Field: LogField>(_ field: Field, string: String?) {
        add(field.rawValue, string: string)
    }
    @inlinable package mutating func add<Field: LogField>(_ field: Field, int: Int64) { add(field.rawValue, int: int) }
    @inlinable package mutating func add<Field: LogField>(_ field: Field, bool: Bool) {
        add(field.rawValue, bool: bool)
    }
    @inlinable package mutating func add<Field: LogField>(_ field: Field, strings: [String]) {
        add(field.rawValue, strings: strings)
    }
    @inlinable package mutating func add<Field: LogField>(
        _ field: Field, value: @autoclosure () -> JSONValue, serializedAs bytes: [UInt8]
    ) {
        add(field.rawValue, value: value(), serializedAs: bytes)
    }
    @inlinable package mutating func add<Field: LogField>(_ field: Field, object: (some JSONObjectWritable)?) {
        add(field.rawValue, object: object)
    }
}
