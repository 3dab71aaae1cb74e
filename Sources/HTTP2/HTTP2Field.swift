/// One header field of an HTTP/2 message as it travels: its bytes, unchanged (HPACK carries octets;
/// a relay passes on what it was given, and only the log reads them as text). Names are lower case on
/// the wire (RFC 9113 §8.2.1); pseudo-header fields (`:method`, `:status`…) are fields like the others,
/// first in the list.
///
/// The bytes may be shared: the fields of one received list are slices of one buffer
/// (``ReceivedHeaderList``), so receiving a list allocates twice, not twice per field. Two fields are
/// equal when their names and values are.
package struct HTTP2Field: Sendable, Equatable {
    /// Holds the name's bytes, then the value's, at `nameStart...`.
    private let storage: [UInt8]
    private let nameStart: Int
    private let valueStart: Int
    private let valueEnd: Int

    package var name: ArraySlice<UInt8> { storage[nameStart..<valueStart] }
    package var value: ArraySlice<UInt8> { storage[valueStart..<valueEnd] }

    package init(name: some Collection<UInt8>, value: some Collection<UInt8>) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(name.count + value.count)
        bytes.append(contentsOf: name)
        bytes.append(contentsOf: value)
        self.init(storage: bytes, nameStart: 0, valueStart: name.count, valueEnd: bytes.count)
    }

    package init(_ name: String, _ value: String) {
        self.init(name: name.utf8, value: value.utf8)
    }

    /// A field whose bytes are `storage[nameStart..<valueStart]` and `storage[valueStart..<valueEnd]`.
    init(storage: [UInt8], nameStart: Int, valueStart: Int, valueEnd: Int) {
        self.storage = storage
        self.nameStart = nameStart
        self.valueStart = valueStart
        self.valueEnd = valueEnd
    }

    package static func == (left: HTTP2Field, right: HTTP2Field) -> Bool {
        left.name.elementsEqual(right.name) && left.value.elementsEqual(right.value)
    }

    package var nameText: String { String(decoding: name, as: UTF8.self) }
    package var valueText: String { String(decoding: value, as: UTF8.self) }

    /// Whether it is a pseudo-header field (its name begins with a colon).
    package var isPseudo: Bool { name.first == UInt8(ascii: ":") }

    /// Its size as SETTINGS_MAX_HEADER_LIST_SIZE counts it: name and value, and 32 octets (RFC 9113 §6.5.2).
    package var listSize: Int { name.count + value.count + 32 }
}

/// A header list as the library hands it over, field by field: the bytes gathered in one buffer,
/// the fields made once the list is whole, each a slice of it.
struct ReceivedHeaderList {
    private var bytes: [UInt8] = []
    /// Where each field's name and value begin and its value ends in ``bytes``.
    private var bounds: [(nameStart: Int, valueStart: Int, valueEnd: Int)] = []
    /// The list's size as SETTINGS_MAX_HEADER_LIST_SIZE counts it.
    private(set) var size = 0

    init() {
        // Room for a typical list (a browser's request has 10-20 fields, ~500 bytes), so it is not
        // regrown field by field.
        bytes.reserveCapacity(512)
        bounds.reserveCapacity(16)
    }

    /// The size the list would have with one more field of these lengths.
    func size(adding nameCount: Int, _ valueCount: Int) -> Int { size + nameCount + valueCount + 32 }

    mutating func append(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        let nameStart = bytes.count
        bytes.append(contentsOf: name)
        let valueStart = bytes.count
        bytes.append(contentsOf: value)
        bounds.append((nameStart, valueStart, bytes.count))
        size += name.count + value.count + 32
    }

    /// The request's `:method` and `:path` so far, each in storage of its own (a field of the list
    /// would keep the whole list's buffer, up to the list's limit, alive with it), and each only up
    /// to 2 KiB: what a reset keeps to say what was asked (``HTTP2StreamReset``), bounded however
    /// many streams a peer has reset at once.
    var requestHead: [HTTP2Field] {
        fields.filter { field in
            (field.name.elementsEqual(":method".utf8) || field.name.elementsEqual(":path".utf8))
                && field.value.count <= 2048
        }.map { HTTP2Field(name: $0.name, value: $0.value) }
    }

    /// The fields, in the order they came.
    var fields: [HTTP2Field] {
        bounds.map {
            HTTP2Field(storage: bytes, nameStart: $0.nameStart, valueStart: $0.valueStart, valueEnd: $0.valueEnd)
        }
    }
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
