/// Why a JSON text could not be read, and where.
///
/// The position is given three ways because its readers differ: people want a line and column,
/// tools that slice the input want the byte offset. `atsproxyctl report` prints
/// `file:line:column: reason` for a bad log line and goes on with the next one.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, e.g. `expected ',' or '}' after object member, found ']'`.
    public var reason: String
    /// 0-based byte offset of the offending byte in the input (for `JSONLines`, in the whole buffer).
    public var offset: Int
    /// 1-based line. Lines end at LF, so CRLF files count the same as LF ones.
    public var line: Int
    /// 1-based column, counted in Unicode scalars as the property list parser counts them, so
    /// it matches what an editor shows for non-ASCII text.
    public var column: Int

    public init(reason: String, offset: Int, line: Int, column: Int) {
        self.reason = reason
        self.offset = offset
        self.line = line
        self.column = column
    }

    /// The error at `offset` of `bytes`, with its line and column worked out from the bytes.
    /// Only errors pay for this scan, so the parser need not count lines as it goes.
    init(_ reason: String, at offset: Int, in bytes: UnsafeBufferPointer<UInt8>) {
        var line = 1
        var lineStart = 0
        let end = min(offset, bytes.count)
        for index in 0..<end where bytes[index] == UInt8(ascii: "\n") {
            line += 1
            lineStart = index + 1
        }
        var column = 1
        // Continuation bytes (10xxxxxx) belong to the scalar before them.
        for index in lineStart..<end where bytes[index] & 0xC0 != 0x80 {
            column += 1
        }
        self.init(reason: reason, offset: offset, line: line, column: column)
    }

    /// The same position as the property list parser's locations.
    public var location: SourceLocation { SourceLocation(line: line, column: column, byteOffset: offset) }

    /// `"line 3, column 14: unterminated string"`.
    public var description: String { "line \(line), column \(column): \(reason)" }
}
