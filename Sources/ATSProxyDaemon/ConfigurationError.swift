/// A setting the daemon cannot use, from the config file or the command line, with the place to fix
/// it: `/etc/atsproxy/atsproxy.conf:12: key 'mode': "enforec" is not one of: enforce, report`, or
/// `--threads 0: must be between 1 and 256` for a flag.
package struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Kind: String, Sendable, Equatable {
        /// The config file is missing, unreadable, a directory or too large.
        case unreadableFile = "unreadable_file"
        case unknownKey = "unknown_key"
        case missingEquals = "missing_equals"
        case emptyValue = "empty_value"
        /// A quote opened and not closed, or text after the closing quote.
        case badQuoting = "bad_quoting"
        case badValue = "bad_value"
        /// A key that takes one value, given on two lines.
        case repeatedKey = "repeated_key"
        /// Values that are fine alone but not together (client classes and listeners).
        case conflictingValues = "conflicting_values"
        /// A file a setting names (policy, CA file, hosts file, log file) that cannot be read or parsed.
        case unusableFile = "unusable_file"
    }

    package var kind: Kind
    package var origin: SettingOrigin
    /// The key (or, for a flag, the setting it names); nil for errors about the whole file.
    package var key: String?
    /// A flag's value as given, shown after the flag; nil for the file, whose line says it.
    package var value: String?
    package var reason: String

    package init(_ kind: Kind, origin: SettingOrigin, key: String?, value: String? = nil, reason: String) {
        self.kind = kind
        self.origin = origin
        self.key = key
        self.value = value
        self.reason = reason
    }

    /// File, line and key first, as compilers print them, so editors and people find the spot.
    package var description: String {
        switch origin {
        case .file(let path, let line):
            let place = line.map { "\(path):\($0)" } ?? path
            return key.map { "\(place): key '\($0)': \(reason)" } ?? "\(place): \(reason)"
        case .commandLine:
            let flag = key.map { "--" + $0 } ?? "the command line"
            return value.map { "\(flag) \($0): \(reason)" } ?? "\(flag): \(reason)"
        }
    }
}

/// Where a setting's value came from.
package enum SettingOrigin: Sendable, Equatable, CustomStringConvertible {
    case commandLine
    /// A line of a config file (nil: the file as a whole).
    case file(path: String, line: Int?)

    package var description: String {
        switch self {
        case .commandLine: "the command line"
        case .file(let path, let line): line.map { "\(path):\($0)" } ?? path
        }
    }
}
