/// Where a value stood in its file, so a finding can point the user at it.
///
/// Text (XML property lists, JSON) has lines and columns; binary property lists only byte offsets
/// of objects.
public struct SourceLocation: Sendable, Hashable, CustomStringConvertible {
    /// 1-based line in an XML file, `nil` for binary files.
    public var line: Int?
    /// 1-based column in an XML file, `nil` for binary files.
    public var column: Int?
    /// Byte offset of the object in a binary file, `nil` for XML files.
    public var byteOffset: Int?

    public init(line: Int? = nil, column: Int? = nil, byteOffset: Int? = nil) {
        self.line = line
        self.column = column
        self.byteOffset = byteOffset
    }

    public static let unknown = SourceLocation()

    public var description: String {
        if let line {
            if let column { return "line \(line), column \(column)" }
            return "line \(line)"
        }
        if let byteOffset { return "byte \(byteOffset)" }
        return "unknown position"
    }
}
