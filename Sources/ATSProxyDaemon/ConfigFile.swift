import Glibc
import POSIX

/// A config file's `key = value` lines, checked for syntax, known keys and repeats; the values are
/// still text (``SettingsLayer`` types them).
///
/// The format: one `key = value` per line; blank lines and lines starting with `#` are ignored;
/// whitespace around keys and values is trimmed; a value may be wrapped in double quotes (nothing is
/// escaped inside them). A `#` after whitespace starts a trailing comment, so `listen = a:1 # lab`
/// is `a:1`; a `#` inside a word (`a#b`) or inside quotes is part of the value. Repeatable keys add
/// one value per line.
///
/// Parsed here rather than with a package: the format is a few lines of rules, and every package
/// adds to each CI run, which builds from a fresh clone.
package struct ConfigFile: Sendable {
    package struct Entry: Sendable, Equatable {
        package var key: ConfigKey
        package var value: String
        package var line: Int
    }

    /// The file as named (on the command line), used in every error.
    package let path: String
    package let entries: [Entry]

    /// A config file is a few dozen lines; anything this large is the wrong file.
    static let maximumSize = 1 << 20

    /// Reads and parses `path`.
    package static func read(path: String) throws(ConfigurationError) -> ConfigFile {
        try ConfigFile(path: path, bytes: try readBytes(path))
    }

    /// Parses `bytes`, a whole file as read from `path` (UTF-8, a malformed sequence read as U+FFFD).
    package init(path: String, bytes: some Collection<UInt8>) throws(ConfigurationError) {
        guard bytes.count <= Self.maximumSize else {
            throw ConfigurationError(
                .unreadableFile, origin: .file(path: path, line: nil), key: nil,
                reason: "larger than 1 MiB: not a config file")
        }
        try self.init(path: path, text: String(decoding: bytes, as: UTF8.self))
    }

    /// Parses `text` as the contents of `path`.
    package init(path: String, text: String) throws(ConfigurationError) {
        self.path = path
        var entries: [Entry] = []
        var firstLine: [ConfigKey: Int] = [:]
        var text = Substring(text)
        if text.hasPrefix("\u{FEFF}") { text = text.dropFirst() }
        for (index, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let number = index + 1
            let line = rawLine.trimmingWhitespace
            if line.isEmpty || line.hasPrefix("#") { continue }
            let entry = try ConfigFile.entry(line, number: number, path: path)
            if !entry.key.isRepeatable, let first = firstLine[entry.key] {
                throw ConfigurationError(
                    .repeatedKey, origin: .file(path: path, line: number), key: entry.key.name,
                    reason: "given again (first on line \(first)); only "
                        + ConfigKey.allCases.filter(\.isRepeatable).map(\.name).joined(separator: ", ")
                        + " may repeat")
            }
            firstLine[entry.key] = firstLine[entry.key] ?? number
            entries.append(entry)
        }
        self.entries = entries
    }

    /// The values of `key`, in file order.
    package func entries(for key: ConfigKey) -> [Entry] { entries.filter { $0.key == key } }

    /// `value` if absolute, else relative to the file's directory: the file moves with what it names.
    func resolvingPath(_ value: String) -> String {
        guard !value.hasPrefix("/"), let slash = path.lastIndex(of: "/") else { return value }
        return String(path[...slash]) + value
    }

    // MARK: - One line

    private static func entry(_ line: Substring, number: Int, path: String) throws(ConfigurationError) -> Entry {
        let origin = SettingOrigin.file(path: path, line: number)
        // A NUL or another control character is never meant: the C calls a value reaches (an
        // address, a path) would stop at a NUL and use only what comes before it.
        if let control = line.unicodeScalars.first(where: { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F }) {
            let code =
                "U+" + String(repeating: "0", count: 4 - String(control.value, radix: 16).count)
                + String(control.value, radix: 16, uppercase: true)
            throw ConfigurationError(
                .badValue, origin: origin, key: nil,
                reason:
                    "a control character (\(code)\(control.value == 0 ? ", NUL" : "")) in the line: a config file is text"
            )
        }
        guard let equals = line.firstIndex(of: "=") else {
            let key = line.prefix { !$0.isWhitespace }
            let rest = line.dropFirst(key.count).trimmingWhitespace
            throw ConfigurationError(
                .missingEquals, origin: origin, key: String(key),
                reason: rest.isEmpty
                    ? "no '=' and no value" : "no '=' between the key and its value (write '\(key) = \(rest)')")
        }
        let keyText = String(line[..<equals].trimmingWhitespace)
        guard let key = ConfigKey(rawValue: keyText) else {
            let hint = ConfigKey.suggestion(for: keyText).map { "; did you mean '\($0.name)'?" } ?? ""
            throw ConfigurationError(
                .unknownKey, origin: origin, key: keyText,
                reason: keyText.isEmpty ? "no key before '='" : "unknown key\(hint)")
        }
        let value = try unquotedValue(line[line.index(after: equals)...].trimmingWhitespace, key: key, origin: origin)
        guard !value.isEmpty else {
            throw ConfigurationError(
                .emptyValue, origin: origin, key: key.name,
                reason: "no value; to keep the default, remove the line or comment it out")
        }
        return Entry(key: key, value: value, line: number)
    }

    /// The value without its quotes or trailing comment.
    private static func unquotedValue(_ text: Substring, key: ConfigKey, origin: SettingOrigin)
        throws(ConfigurationError) -> String
    {
        guard text.hasPrefix("\"") else {
            // Unquoted: a `#` starts a comment only at the start or after whitespace.
            var previous: Character = " "
            for index in text.indices {
                if text[index] == "#" && previous.isWhitespace { return String(text[..<index].trimmingWhitespace) }
                previous = text[index]
            }
            return String(text)
        }
        let inside = text.dropFirst()
        guard let close = inside.firstIndex(of: "\"") else {
            throw ConfigurationError(
                .badQuoting, origin: origin, key: key.name, reason: "the value's opening quote is never closed")
        }
        let after = inside[inside.index(after: close)...].trimmingWhitespace
        guard after.isEmpty || after.hasPrefix("#") else {
            throw ConfigurationError(
                .badQuoting, origin: origin, key: key.name, reason: "text after the closing quote: \(after)")
        }
        return String(inside[..<close])
    }

    // MARK: - Reading

    private static func readBytes(_ path: String) throws(ConfigurationError) -> [UInt8] {
        do {
            return try FileContents.read(path, maximumSize: maximumSize).bytes
        } catch {
            let reason =
                if case .tooLarge = error.problem { "larger than 1 MiB: not a config file" } else {
                    "cannot read the config file: \(error.reason)"
                }
            throw ConfigurationError(.unreadableFile, origin: .file(path: path, line: nil), key: nil, reason: reason)
        }
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs.
    var trimmingWhitespace: Substring {
        let start = firstIndex { !$0.isWhitespace } ?? endIndex
        let end = lastIndex { !$0.isWhitespace }.map { index(after: $0) } ?? start
        return self[start..<end]
    }
}
