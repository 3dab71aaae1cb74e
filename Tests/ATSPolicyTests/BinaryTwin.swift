@testable import ATSPolicy

/// The binary twin of an XML policy written inline in a test: parses the XML and writes every
/// object out again as a binary plist, keys in file order and repeated keys kept (plistlib's twins,
/// Fixtures/make-binary-fixtures.py, are for fixture files; table rows need one in memory).
enum BinaryTwin {
    static func of(xml: String) throws -> [UInt8] {
        var writer = Writer()
        _ = writer.add(try PropertyListParser.parse(Array(xml.utf8)).root.value)
        return writer.build()
    }

    /// The XML document and its twin, each loaded as a policy, labelled by format.
    static func policies(xml: String, settings: PolicySettings = .default) throws
        -> [(format: String, policy: TransportSecurityPolicy)]
    {
        [
            ("xml", try PolicyLoader.load(bytes: Array(xml.utf8), file: "test.plist", settings: settings)),
            ("binary", try PolicyLoader.load(bytes: try of(xml: xml), file: "test.bplist", settings: settings)),
        ]
    }

    /// Objects are never shared, and references and offsets are 4 bytes wide: simple, and legal.
    private struct Writer {
        var objects: [[UInt8]] = []

        mutating func add(_ value: PropertyListValue) -> Int {
            let index = objects.count
            objects.append([])
            var bytes: [UInt8]
            switch value {
            case .bool(let flag): bytes = [flag ? 0x09 : 0x08]
            case .integer(let number): bytes = [0x13] + Self.bigEndian(UInt64(bitPattern: number), 8)
            case .unsignedInteger(let number): bytes = [0x14] + Self.bigEndian(0, 8) + Self.bigEndian(number, 8)
            case .real(let number): bytes = [0x23] + Self.bigEndian(number.bitPattern, 8)
            case .date(let seconds): bytes = [0x33] + Self.bigEndian((seconds - 978_307_200).bitPattern, 8)
            case .data(let data): bytes = Self.header(0x40, data.count) + data
            case .uid(let number): bytes = [0x87] + Self.bigEndian(number, 8)
            case .string(let text):
                if text.unicodeScalars.allSatisfy(\.isASCII) {
                    bytes = Self.header(0x50, text.utf8.count) + Array(text.utf8)
                } else {
                    let units = Array(text.utf16)
                    bytes = Self.header(0x60, units.count) + units.flatMap { Self.bigEndian(UInt64($0), 2) }
                }
            case .array(let items):
                let references = items.map { add($0.value) }
                bytes = Self.header(0xA0, references.count) + references.flatMap { Self.bigEndian(UInt64($0), 4) }
            case .dictionary(let entries):
                let keys = entries.map { add(.string($0.key)) }
                let values = entries.map { add($0.value.value) }
                bytes = Self.header(0xD0, entries.count) + (keys + values).flatMap { Self.bigEndian(UInt64($0), 4) }
            }
            objects[index] = bytes
            return index
        }

        func build() -> [UInt8] {
            var bytes = Array("bplist00".utf8)
            var offsets: [Int] = []
            for object in objects {
                offsets.append(bytes.count)
                bytes += object
            }
            let table = bytes.count
            for offset in offsets { bytes += Self.bigEndian(UInt64(offset), 4) }
            bytes += [0, 0, 0, 0, 0, 0, 4, 4]
            bytes += Self.bigEndian(UInt64(objects.count), 8) + Self.bigEndian(0, 8) + Self.bigEndian(UInt64(table), 8)
            return bytes
        }

        static func header(_ marker: UInt8, _ count: Int) -> [UInt8] {
            count < 15 ? [marker | UInt8(count)] : [marker | 0x0F, 0x13] + bigEndian(UInt64(count), 8)
        }

        static func bigEndian(_ value: UInt64, _ size: Int) -> [UInt8] {
            (0..<size).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
        }
    }
}
