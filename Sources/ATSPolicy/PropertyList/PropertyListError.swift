import TextFormats

/// Why a property list could not be read, and where.
///
/// The location is a line and column for XML files and a byte offset for binary ones, so
/// `atsproxyctl check` can point the user at the exact spot.
public struct PropertyListError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, e.g. `expected </string> but found </dict>`.
    public var reason: String
    /// Where it went wrong.
    public var location: SourceLocation

    init(_ reason: String, at location: SourceLocation) {
        self.reason = reason
        self.location = location
    }

    /// `"line 12, column 5: unterminated <key> element"` or `"byte 40: …"`.
    public var description: String { "\(location): \(reason)" }
}
