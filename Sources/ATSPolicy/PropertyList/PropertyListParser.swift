/// The two on-disk encodings of a property list that the parser reads.
public enum PropertyListFormat: String, Sendable {
    case xml
    case binary
}

/// Reads XML and binary (`bplist00`) property lists into ``PropertyListNode`` trees.
///
/// Pure Swift over bytes, so it builds on Linux without Foundation's property-list support,
/// and it keeps what Foundation would lose: integer versus boolean, entry order, duplicate
/// keys and the location of every value.
public enum PropertyListParser {
    /// Detects the format from the bytes ("bplist00" magic → binary; otherwise XML after an
    /// optional UTF-8 BOM and whitespace).
    ///
    /// The root is the value inside `<plist>` (or the bare top element, which CoreFoundation
    /// also accepts). XML locations are the line and column of each opening tag; binary ones
    /// the byte offset of each object.
    public static func parse(
        _ bytes: [UInt8]
    ) throws(PropertyListError) -> (root: PropertyListNode, format: PropertyListFormat) {
        // Any "bplist" prefix is taken as binary, so another version gets a message about
        // the version instead of an XML error about stray text at line 1.
        if bytes.starts(with: BinaryPropertyListParser.magicPrefix) {
            return (try BinaryPropertyListParser(bytes).parse(), .binary)
        }
        var parser = try XMLPropertyListParser(bytes)
        return (try parser.parse(), .xml)
    }
}
