import TextFormats

/// A place in the policy file, written so that domain keys with dots stay unambiguous:
/// `NSAppTransportSecurity.NSExceptionDomains["example.com"].NSIncludesSubdomains`.
public struct PolicyKeyPath: Sendable, Hashable, CustomStringConvertible {
    public private(set) var components: [String]

    public init(_ components: [String] = []) { self.components = components }

    public func appending(_ key: String) -> PolicyKeyPath { PolicyKeyPath(components + [key]) }

    public func appending(index: Int) -> PolicyKeyPath { PolicyKeyPath(components + ["[\(index)]"]) }

    public var description: String {
        var text = ""
        for component in components {
            if component.hasPrefix("[") {
                text += component
            } else if PolicyKeyPath.isPlainKey(component) {
                text += text.isEmpty ? component : "." + component
            } else {
                text += "[" + PolicyKeyPath.quoted(component) + "]"
            }
        }
        return text.isEmpty ? "(root)" : text
    }

    /// A domain key in double quotes, escaped as a JSON string is (quotes, backslashes, control
    /// characters), so a key with a stray newline or tab shows what it really holds.
    static func quoted(_ key: String) -> String {
        var out = ""
        JSONValue.writeString(key, to: &out)
        return out
    }

    /// Plist key names (`NSExceptionDomains`, capitalised by convention) print bare; anything else
    /// (domain keys, which must be lowercase to match) in brackets.
    private static func isPlainKey(_ key: String) -> Bool {
        guard let first = key.unicodeScalars.first, ("A"..."Z").contains(first) else { return false }
        return key.unicodeScalars.allSatisfy {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-")
        }
    }
}

/// Something `atsproxyctl check` tells about a policy: an ignored key, a wrong type, a key that
/// never matches, an obsolete key. Findings never stop a policy from loading.
public struct Finding: Sendable, Hashable {
    public enum Severity: String, Sendable, Comparable, CaseIterable {
        /// A key the user wrote has no effect or not the one they meant.
        case error
        /// Legal but suspicious, or ignored in a way worth knowing.
        case warning
        /// A fact about how the policy is read.
        case info

        private var rank: Int {
            switch self {
            case .error: 0
            case .warning: 1
            case .info: 2
            }
        }

        public static func < (lhs: Severity, rhs: Severity) -> Bool { lhs.rank < rhs.rank }
    }

    /// A stable identifier for tests and scripts (`wrong_type`, `unknown_key`, …).
    public var code: String
    public var severity: Severity
    public var path: PolicyKeyPath
    public var message: String
    /// What to write instead, when there is an obvious fix.
    public var fix: String?
    public var location: SourceLocation

    public init(
        _ severity: Severity, code: String, path: PolicyKeyPath, message: String, fix: String? = nil,
        location: SourceLocation = .unknown
    ) {
        self.code = code
        self.severity = severity
        self.path = path
        self.message = message
        self.fix = fix
        self.location = location
    }
}
