/// The field lines of a message head, in the order they arrived.
///
/// Order and repetition are kept because both matter on the wire: repeated `Via` or `Set-Cookie`
/// lines must be forwarded as they came (RFC 9110 §5.3). Lookups ignore case.
package struct HTTPHeaders: Sendable, Hashable, RandomAccessCollection, CustomStringConvertible {
    package private(set) var fields: [HTTPField]

    package init() {
        fields = []
    }

    package init(_ pairs: [(name: String, value: String)]) {
        fields = pairs.map { HTTPField(name: $0.name, value: $0.value) }
    }

    package init(fields: [HTTPField]) {
        self.fields = fields
    }

    package var startIndex: Int { fields.startIndex }
    package var endIndex: Int { fields.endIndex }
    package subscript(position: Int) -> HTTPField {
        get { fields[position] }
        set { fields[position] = newValue }
    }

    /// The value of every line called `name`, one element per line, not split at commas.
    package func values(for name: some StringProtocol) -> [String] {
        fields.filter { $0.hasName(name) }.map(\.value)
    }

    /// The value of the first line called `name`.
    package func first(_ name: some StringProtocol) -> String? {
        fields.first { $0.hasName(name) }?.value
    }

    package func contains(_ name: some StringProtocol) -> Bool {
        fields.contains { $0.hasName(name) }
    }

    /// The elements of a list-valued field (RFC 9110 §5.6.1) over all its lines: split at commas,
    /// trimmed, empty elements dropped. For token lists such as Connection; it does not
    /// understand quoted strings.
    package func listValues(for name: some StringProtocol) -> [String] {
        fields.filter { $0.hasName(name) }.flatMap { field in
            HTTPSyntax.listElements(field.valueBytes).filter { !$0.isEmpty }.map { String(decoding: $0, as: UTF8.self) }
        }
    }

    /// Appends a line at the end.
    package mutating func add(name: String, value: String) {
        fields.append(HTTPField(name: name, value: value))
    }

    package mutating func add(_ field: HTTPField) {
        fields.append(field)
    }

    /// Inserts a line at `index` (clamped to the valid range, so it never traps).
    package mutating func insert(_ field: HTTPField, at index: Int) {
        fields.insert(field, at: Swift.min(Swift.max(index, 0), fields.count))
    }

    /// Removes every line called `name`.
    package mutating func removeAll(_ name: some StringProtocol) {
        fields.removeAll { $0.hasName(name) }
    }

    /// Removes every line whose field matches `shouldRemove`.
    package mutating func removeAll(where shouldRemove: (HTTPField) -> Bool) {
        fields.removeAll(where: shouldRemove)
    }

    /// Gives the first line called `name` this value and removes the others, or appends a line
    /// when there is none.
    package mutating func replaceOrAdd(name: String, value: String) {
        guard let index = fields.firstIndex(where: { $0.hasName(name) }) else {
            add(name: name, value: value)
            return
        }
        fields[index].value = value
        var position = fields.index(after: index)
        while position < fields.endIndex {
            if fields[position].hasName(name) { fields.remove(at: position) } else { position += 1 }
        }
    }

    package var description: String { fields.map(\.description).joined(separator: "\n") }
}
