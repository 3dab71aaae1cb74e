/// One field line of a message head: a name and its value.
///
/// The value is kept as the bytes that arrived, so a value in Latin-1 or any other non-UTF-8
/// encoding (obs-text, RFC 9110 §5.5) is forwarded unchanged; ``value`` decodes it as UTF-8,
/// replacing invalid sequences, for reading.
package struct HTTPField: Sendable, Hashable, CustomStringConvertible {
    package var name: String
    package var valueBytes: [UInt8]

    package init(name: String, value: String) {
        self.name = name
        self.valueBytes = Array(value.utf8)
    }

    init(name: String, valueBytes: [UInt8]) {
        self.name = name
        self.valueBytes = valueBytes
    }

    package var value: String {
        get { String(decoding: valueBytes, as: UTF8.self) }
        set { valueBytes = Array(newValue.utf8) }
    }

    /// Whether this field is called `name`; field names are case-insensitive (RFC 9110 §5.1).
    package func hasName(_ name: some StringProtocol) -> Bool {
        HTTPSyntax.equalsIgnoringCase(self.name, name)
    }

    package var description: String { "\(name): \(value)" }
}
