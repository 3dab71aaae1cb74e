/// One header field of an HTTP/2 message as it travels: its bytes, unchanged (HPACK carries octets;
/// a relay passes on what it was given, and only the log reads them as text). Names are lower case on
/// the wire (RFC 9113 §8.2.1); pseudo-header fields (`:method`, `:status`…) are fields like the others,
/// first in the list.
package struct HTTP2Field: Sendable, Equatable {
    /// The name's bytes, then the value's: one allocation per field, not two. A relay makes a field
    /// for every one of every header list it receives, and these were a quarter of its allocations.
    private let bytes: [UInt8]
    private let nameCount: Int

    package var name: ArraySlice<UInt8> { bytes[..<nameCount] }
    package var value: ArraySlice<UInt8> { bytes[nameCount...] }

    package init(name: some Collection<UInt8>, value: some Collection<UInt8>) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(name.count + value.count)
        bytes.append(contentsOf: name)
        bytes.append(contentsOf: value)
        self.bytes = bytes
        nameCount = name.count
    }

    package init(_ name: String, _ value: String) {
        self.init(name: name.utf8, value: value.utf8)
    }

    package var nameText: String { String(decoding: name, as: UTF8.self) }
    package var valueText: String { String(decoding: value, as: UTF8.self) }

    /// Whether it is a pseudo-header field (its name begins with a colon).
    package var isPseudo: Bool { name.first == UInt8(ascii: ":") }

    /// Its size as SETTINGS_MAX_HEADER_LIST_SIZE counts it: name and value, and 32 octets (RFC 9113 §6.5.2).
    package var listSize: Int { name.count + value.count + 32 }
}

extension [HTTP2Field] {
    /// The first value of the field `name` (lower case), as text.
    package func value(of name: String) -> String? { first(named: name)?.valueText }

    /// The first field named `name` (lower case). Compared as bytes: this runs for every stream.
    package func first(named name: String) -> HTTP2Field? {
        var name = name
        return name.withUTF8 { wanted in first { $0.name.elementsEqual(wanted) } }
    }

    /// Every value of the field `name` (lower case), as text, in order.
    package func values(of name: String) -> [String] {
        var name = name
        return name.withUTF8 { wanted in filter { $0.name.elementsEqual(wanted) }.map(\.valueText) }
    }
}
