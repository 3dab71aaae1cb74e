import TextFormats

/// Reads a binary property list (`bplist00`).
///
/// Layout: the 8-byte magic, the objects, an offset table with the offset of each object,
/// and a 32-byte trailer that says where the table is and how wide its entries and the
/// object references are. Every size, count and reference comes from the file, so each is
/// checked against the buffer before use: no input can trap, loop forever or recurse deeply.
struct BinaryPropertyListParser {
    static let magicPrefix = Array("bplist".utf8)
    static let maximumDepth = 512
    /// Objects may be shared, so a small file can stand for a huge tree (each array holding
    /// the next one twice doubles it); past this many values the file is rejected.
    static let maximumValueCount = 1 << 22
    /// Binary plist dates count seconds from 2001-01-01; ``PropertyListValue/date(_:)`` from 1970.
    static let secondsFrom1970To2001 = 978_307_200.0

    private let bytes: [UInt8]
    private let trailer: Trailer

    init(_ bytes: [UInt8]) throws(PropertyListError) {
        self.bytes = bytes
        self.trailer = try Trailer(bytes)
    }

    // MARK: - Trailer

    private struct Trailer {
        static let size = 32
        let offsetSize: Int
        let referenceSize: Int
        let objectCount: Int
        let topObject: Int
        /// Where the offset table starts, which is also where the objects end.
        let offsetTableStart: Int

        init(_ bytes: [UInt8]) throws(PropertyListError) {
            func fail(_ reason: String, at offset: Int) -> PropertyListError {
                PropertyListError(reason, at: SourceLocation(byteOffset: offset))
            }
            let headerSize = 8
            if bytes.count >= headerSize, bytes[6] != UInt8(ascii: "0") || bytes[7] != UInt8(ascii: "0") {
                let magic = String(decoding: bytes[0..<headerSize], as: UTF8.self)
                throw fail("unsupported binary property list version \"\(magic)\"", at: 6)
            }
            guard bytes.count >= headerSize + Self.size else {
                throw fail("the file is too short to be a binary property list", at: 0)
            }
            // Bytes 0–5 are unused; 6 and 7 are sizes; then three 8-byte big-endian numbers.
            let start = bytes.count - Self.size
            func number(at field: Int) -> UInt64 {
                BinaryPropertyListParser.bigEndian(bytes[start + field..<start + field + 8])
            }
            offsetSize = Int(bytes[start + 6])
            referenceSize = Int(bytes[start + 7])
            guard (1...8).contains(offsetSize) else {
                throw fail("invalid offset size \(offsetSize) in trailer", at: start + 6)
            }
            guard (1...8).contains(referenceSize) else {
                throw fail("invalid object reference size \(referenceSize) in trailer", at: start + 7)
            }
            guard let count = Int(exactly: number(at: 8)), count > 0 else {
                throw fail("invalid object count in trailer", at: start + 8)
            }
            objectCount = count
            guard let top = Int(exactly: number(at: 16)), top < count else {
                throw fail("top object index is out of range", at: start + 16)
            }
            topObject = top
            // The table must lie between the objects (at least one byte of them) and the trailer.
            let tableSize = count.multipliedReportingOverflow(by: offsetSize)
            guard let tableStart = Int(exactly: number(at: 24)),
                tableStart > headerSize, !tableSize.overflow, tableSize.partialValue <= start - tableStart
            else { throw fail("offset table is out of bounds", at: start + 24) }
            // ...and end where the trailer starts, as CoreFoundation requires (its file length must
            // be the header, objects, table and trailer exactly): bytes inserted or appended shift
            // every offset, and iOS refuses such a file rather than read shifted objects.
            guard tableSize.partialValue == start - tableStart else {
                throw fail(
                    "\(start - tableStart - tableSize.partialValue) bytes between the offset table and the trailer: "
                        + "the file is damaged (bytes inserted or appended)", at: tableStart + tableSize.partialValue)
            }
            offsetTableStart = tableStart
        }
    }

    // MARK: - Tree

    /// A dictionary, array or set whose values are still being read.
    private struct OpenCollection {
        let index: Int
        let offset: Int
        /// `nil` for arrays and sets.
        let keys: [(key: String, location: SourceLocation)]?
        let valueReferences: [Int]
        var values: [PropertyListNode] = []
        /// This collection and everything read into it so far, shared objects counted each time.
        var valueCount = 1

        var node: PropertyListNode {
            let value: PropertyListValue
            if let keys {
                value = .dictionary(
                    zip(keys, values).map { key, value in
                        PropertyListEntry(key: key.key, keyLocation: key.location, value: value)
                    })
            } else {
                value = .array(values)
            }
            return PropertyListNode(value, at: SourceLocation(byteOffset: offset))
        }
    }

    private typealias Parsed = (node: PropertyListNode, valueCount: Int)

    func parse() throws(PropertyListError) -> PropertyListNode {
        // Objects may be referenced many times; each is decoded once.
        var parsed = [Parsed?](repeating: nil, count: trailer.objectCount)
        // Objects being read: meeting one again means it contains itself.
        var isOpen = [Bool](repeating: false, count: trailer.objectCount)
        var open: [OpenCollection] = []
        func push(_ collection: OpenCollection) throws(PropertyListError) {
            guard open.count < Self.maximumDepth else {
                throw error("nesting deeper than \(Self.maximumDepth) levels", at: collection.offset)
            }
            isOpen[collection.index] = true
            open.append(collection)
        }

        var nextObject: Int? = trailer.topObject
        while true {
            let finished: Parsed
            if let index = nextObject {
                nextObject = nil
                if let done = parsed[index] {
                    finished = done
                } else {
                    let offset = try objectOffset(index)
                    guard !isOpen[index] else { throw error("object \(index) contains itself", at: offset) }
                    switch try decodeObject(at: offset) {
                    case .leaf(let value):
                        finished = (PropertyListNode(value, at: SourceLocation(byteOffset: offset)), 1)
                        parsed[index] = finished
                    case .array(let references):
                        try push(OpenCollection(index: index, offset: offset, keys: nil, valueReferences: references))
                        continue
                    case .dictionary(let keyReferences, let references):
                        var keys: [(key: String, location: SourceLocation)] = []
                        for reference in keyReferences {
                            keys.append(try key(reference, ofDictionaryAt: offset, parsed: &parsed))
                        }
                        try push(OpenCollection(index: index, offset: offset, keys: keys, valueReferences: references))
                        continue
                    }
                }
            } else {
                let top = open[open.count - 1]
                if top.values.count < top.valueReferences.count {
                    nextObject = top.valueReferences[top.values.count]
                    continue
                }
                open.removeLast()
                isOpen[top.index] = false
                finished = (top.node, top.valueCount)
                parsed[top.index] = finished
            }
            guard !open.isEmpty else { return finished.node }
            open[open.count - 1].values.append(finished.node)
            open[open.count - 1].valueCount += finished.valueCount
            guard open[open.count - 1].valueCount <= Self.maximumValueCount else {
                throw error(
                    "the property list expands to more than \(Self.maximumValueCount) values through shared objects",
                    at: open[open.count - 1].offset
                )
            }
        }
    }

    private func key(
        _ index: Int, ofDictionaryAt dictionaryOffset: Int, parsed: inout [Parsed?]
    ) throws(PropertyListError) -> (key: String, location: SourceLocation) {
        let offset = try objectOffset(index)
        let location = SourceLocation(byteOffset: offset)
        if case .string(let key)? = parsed[index]?.node.value { return (key, location) }
        // Check the type before decoding, so a container key is not read for nothing.
        let type = bytes[offset] >> 4
        guard type == 0x5 || type == 0x6, case .leaf(.string(let key)) = try decodeObject(at: offset) else {
            let found = Self.typeName(ofMarker: bytes[offset])
            let reason = "dictionary key must be a string, found \(found) (dictionary at byte \(dictionaryOffset))"
            throw error(reason, at: offset)
        }
        parsed[index] = (PropertyListNode(.string(key), at: location), 1)
        return (key, location)
    }

    // MARK: - Objects

    private enum DecodedObject {
        case leaf(PropertyListValue)
        case array([Int])
        case dictionary(keys: [Int], values: [Int])
    }

    /// Where object `index` starts, from the offset table.
    private func objectOffset(_ index: Int) throws(PropertyListError) -> Int {
        let entry = trailer.offsetTableStart + index * trailer.offsetSize
        guard let offset = Int(exactly: Self.bigEndian(bytes[entry..<entry + trailer.offsetSize])),
            offset >= 8, offset < trailer.offsetTableStart
        else { throw error("offset of object \(index) is out of bounds", at: entry) }
        return offset
    }

    private func decodeObject(at offset: Int) throws(PropertyListError) -> DecodedObject {
        let marker = bytes[offset]
        let info = Int(marker & 0x0F)
        switch marker >> 4 {
        case 0x0 where marker == 0x08: return .leaf(.bool(false))
        case 0x0 where marker == 0x09: return .leaf(.bool(true))
        case 0x1: return .leaf(try integer(sizeExponent: info, at: offset))
        case 0x2 where info == 2:
            let bits = UInt32(Self.bigEndian(try content(of: offset, from: offset + 1, count: 4)))
            return .leaf(.real(Double(Float(bitPattern: bits))))
        case 0x2 where info == 3:
            return .leaf(.real(Double(bitPattern: Self.bigEndian(try content(of: offset, from: offset + 1, count: 8)))))
        case 0x3 where info == 3:
            let seconds = Double(bitPattern: Self.bigEndian(try content(of: offset, from: offset + 1, count: 8)))
            return .leaf(.date(seconds + Self.secondsFrom1970To2001))
        case 0x4:
            let (count, start) = try length(info, at: offset)
            return .leaf(.data(Array(try content(of: offset, from: start, count: count))))
        case 0x5:
            let (count, start) = try length(info, at: offset)
            let characters = try content(of: offset, from: start, count: count)
            if let index = characters.firstIndex(where: { $0 >= 0x80 }) {
                throw error("non-ASCII byte in ASCII string", at: index)
            }
            return .leaf(.string(String(decoding: characters, as: UTF8.self)))
        case 0x6:
            let (count, start) = try length(info, at: offset)
            let characters = try content(of: offset, from: start, count: count, elementSize: 2)
            return .leaf(.string(try utf16String(characters, at: offset)))
        case 0x8 where info < 8:
            return .leaf(.uid(Self.bigEndian(try content(of: offset, from: offset + 1, count: info + 1))))
        case 0xA, 0xC:  // array, set (read as an array: a plist set has no other meaning here)
            let (count, start) = try length(info, at: offset)
            return .array(try references(of: offset, from: start, count: count))
        case 0xD:
            let (count, start) = try length(info, at: offset)
            let keys = try references(of: offset, from: start, count: count)
            // The key references were just read, so this multiplication cannot overflow.
            let values = try references(of: offset, from: start + count * trailer.referenceSize, count: count)
            return .dictionary(keys: keys, values: values)
        default:
            let type = Self.typeName(ofMarker: marker)
            throw error("unsupported object \(type) (marker 0x\(String(marker, radix: 16)))", at: offset)
        }
    }

    /// Integers take 1, 2, 4 or 8 bytes (`2^sizeExponent`); 1–4 bytes are unsigned and 8 are
    /// signed. Writers use 16 bytes (signed 128-bit) for values above `Int64.max`, which is
    /// accepted when the value fits in 64 bits.
    private func integer(sizeExponent: Int, at offset: Int) throws(PropertyListError) -> PropertyListValue {
        switch sizeExponent {
        case 0...2:
            return .integer(Int64(Self.bigEndian(try content(of: offset, from: offset + 1, count: 1 << sizeExponent))))
        case 3:
            return .integer(Int64(bitPattern: Self.bigEndian(try content(of: offset, from: offset + 1, count: 8))))
        case 4:
            let high = Self.bigEndian(try content(of: offset, from: offset + 1, count: 8))
            let low = Self.bigEndian(try content(of: offset, from: offset + 9, count: 8))
            if high == 0 {
                return low <= UInt64(Int64.max) ? .integer(Int64(low)) : .unsignedInteger(low)
            }
            if high == .max, low >= 1 << 63 { return .integer(Int64(bitPattern: low)) }
            throw error("integer does not fit in 64 bits", at: offset)
        default:
            throw error("invalid integer size \(sizeExponent)", at: offset)
        }
    }

    /// The element count of data, a string or a collection, and where its content starts.
    /// Counts of 15 and more are in an integer object after the marker.
    private func length(_ info: Int, at offset: Int) throws(PropertyListError) -> (count: Int, contentStart: Int) {
        guard info == 0x0F else { return (info, offset + 1) }
        let integerOffset = offset + 1
        guard integerOffset < trailer.offsetTableStart else { throw error("object is truncated", at: offset) }
        let marker = bytes[integerOffset]
        guard marker >> 4 == 0x1, marker & 0x0F <= 3 else {
            throw error("invalid length marker 0x\(String(marker, radix: 16))", at: integerOffset)
        }
        let size = 1 << Int(marker & 0x0F)
        // An 8-byte length is signed; a negative one is rejected by Int(exactly:).
        let lengthBytes = try content(of: offset, from: integerOffset + 1, count: size)
        guard let count = Int(exactly: Self.bigEndian(lengthBytes)) else {
            throw error("invalid length", at: integerOffset)
        }
        return (count, integerOffset + 1 + size)
    }

    /// `count` object references starting at `start`, each checked against the object count.
    private func references(of offset: Int, from start: Int, count: Int) throws(PropertyListError) -> [Int] {
        let size = trailer.referenceSize
        let area = try content(of: offset, from: start, count: count, elementSize: size)
        var references: [Int] = []
        references.reserveCapacity(count)
        var position = area.startIndex
        while position < area.endIndex {
            guard let reference = Int(exactly: Self.bigEndian(area[position..<position + size])),
                reference < trailer.objectCount
            else { throw error("object reference is out of range", at: position) }
            references.append(reference)
            position += size
        }
        return references
    }

    /// The bytes of an object's content, checked to lie within the object area.
    private func content(
        of offset: Int, from start: Int, count: Int, elementSize: Int = 1
    ) throws(PropertyListError) -> ArraySlice<UInt8> {
        let byteCount = count.multipliedReportingOverflow(by: elementSize)
        guard !byteCount.overflow, start <= trailer.offsetTableStart,
            byteCount.partialValue <= trailer.offsetTableStart - start
        else { throw error("object extends past the end of the object area", at: offset) }
        return bytes[start..<start + byteCount.partialValue]
    }

    private func utf16String(_ content: ArraySlice<UInt8>, at offset: Int) throws(PropertyListError) -> String {
        var units: [UInt16] = []
        units.reserveCapacity(content.count / 2)
        var index = content.startIndex
        while index < content.endIndex {
            units.append(UInt16(content[index]) << 8 | UInt16(content[index + 1]))
            index += 2
        }
        var string = ""
        var iterator = units.makeIterator()
        var decoder = UTF16()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): string.unicodeScalars.append(scalar)
            case .emptyInput: return string
            case .error: throw error("invalid UTF-16 in string", at: offset)
            }
        }
    }

    /// The type an object marker stands for, for messages.
    private static func typeName(ofMarker marker: UInt8) -> String {
        switch marker >> 4 {
        case 0x0: marker == 0x08 || marker == 0x09 ? "boolean" : marker == 0x00 ? "null" : "fill byte"
        case 0x1: "integer"
        case 0x2: "real"
        case 0x3: "date"
        case 0x4: "data"
        case 0x5, 0x6: "string"
        case 0x8: "UID"
        case 0xA: "array"
        case 0xC: "set"
        case 0xD: "dictionary"
        default: "of unknown type"
        }
    }

    private func error(_ reason: String, at offset: Int) -> PropertyListError {
        PropertyListError(reason, at: SourceLocation(byteOffset: offset))
    }

    /// An unsigned big-endian number of at most 8 bytes.
    private static func bigEndian(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }
}
