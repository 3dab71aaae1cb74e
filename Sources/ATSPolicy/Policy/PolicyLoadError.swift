import TextFormats

/// Why a policy file could not be used at all. (Problems inside a policy that loads are
/// ``Finding``s; a policy that fails to load never replaces a working one.)
public struct PolicyLoadError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, Equatable {
        case fileNotFound = "file_not_found"
        case isDirectory = "is_directory"
        case unreadable
        case notAPropertyList = "not_a_plist"
        case rootNotDictionary = "root_not_dictionary"
        case atsNotDictionary = "ats_not_dictionary"
    }

    public var code: Code
    /// The file at fault, as the user named it.
    public var file: String
    public var reason: String
    public var location: SourceLocation?

    public init(_ code: Code, file: String, reason: String, location: SourceLocation? = nil) {
        self.code = code
        self.file = file
        self.reason = reason
        self.location = location
    }

    /// `policy.plist: line 4, column 9: expected </dict>`: file first, as compilers print it.
    public var description: String {
        if let location, location != .unknown { return "\(file): \(location): \(reason)" }
        return "\(file): \(reason)"
    }
}
