import Foundation

/// Reads a policy file from disk: XML or binary plist, an Info.plist or a bare ATS dictionary.
public enum PolicyLoader {
    /// A loaded policy together with what the file was.
    public struct Loaded: Sendable {
        public var policy: TransportSecurityPolicy
        public var path: String
        public var format: PropertyListFormat
        /// SHA-256 of the file's bytes, hex: what `status` shows and reloads compare.
        public var sha256: String
        /// The property list as parsed, for reporting what a new version of the file changed.
        public var root: PropertyListNode
    }

    /// Reads, parses and interprets `path`. Throws a ``PolicyLoadError`` naming the file and the
    /// reason (missing, a directory, unreadable, not a plist, not a dictionary).
    public static func load(path: String, settings: PolicySettings = .default) throws(PolicyLoadError) -> Loaded {
        let bytes = try readFile(path)
        let parsed: (root: PropertyListNode, format: PropertyListFormat)
        do {
            parsed = try PropertyListParser.parse(bytes)
        } catch {
            throw PolicyLoadError(
                .notAPropertyList, file: displayName(path), reason: "not a property list: \(error.reason)",
                location: error.location)
        }
        let policy = try TransportSecurityPolicy(root: parsed.root, settings: settings, file: displayName(path))
        return Loaded(
            policy: policy, path: path == "-" ? "(standard input)" : path, format: parsed.format,
            sha256: SHA256.hex(of: bytes),
            root: parsed.root)
    }

    /// Parses policy bytes already in memory (the `file` name is used in errors only).
    public static func load(bytes: [UInt8], file: String, settings: PolicySettings = .default)
        throws(PolicyLoadError) -> TransportSecurityPolicy
    {
        let parsed: (root: PropertyListNode, format: PropertyListFormat)
        do {
            parsed = try PropertyListParser.parse(bytes)
        } catch {
            throw PolicyLoadError(
                .notAPropertyList, file: file, reason: "not a property list: \(error.reason)", location: error.location)
        }
        return try TransportSecurityPolicy(root: parsed.root, settings: settings, file: file)
    }

    /// Reads a regular file, or standard input for `-`, refusing more than ``maximumFileSize`` bytes.
    static func readFile(_ path: String) throws(PolicyLoadError) -> [UInt8] {
        if path == "-" {
            let data = FileHandle.standardInput.readData(ofLength: maximumFileSize + 1)
            guard data.count <= maximumFileSize else {
                throw PolicyLoadError(
                    .notAPropertyList, file: "(standard input)", reason: "more than 64 MiB: not a policy")
            }
            return [UInt8](data)
        }
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: path)
        } catch {
            throw PolicyLoadError(.fileNotFound, file: path, reason: "no such file")
        }
        switch attributes[.type] as? FileAttributeType {
        case .typeRegular?:
            break
        case .typeDirectory?:
            throw PolicyLoadError(.isDirectory, file: path, reason: "is a directory, not a policy file")
        default:
            // A FIFO or device would block or never end; policies are regular files (or `-`).
            throw PolicyLoadError(
                .unreadable, file: path, reason: "is not a regular file (use - to read standard input)")
        }
        if let size = attributes[.size] as? NSNumber, size.intValue > maximumFileSize {
            throw PolicyLoadError(
                .notAPropertyList, file: path,
                reason: "is \(size.intValue) bytes; a policy is at most \(maximumFileSize / 1_048_576) MiB")
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw PolicyLoadError(.unreadable, file: path, reason: "permission denied")
        }
        defer { try? handle.close() }
        do {
            return [UInt8](try handle.readToEnd() ?? Data())
        } catch {
            throw PolicyLoadError(.unreadable, file: path, reason: "cannot be read: \(error.localizedDescription)")
        }
    }

    static func displayName(_ path: String) -> String { path == "-" ? "(standard input)" : path }

    static let maximumFileSize = 64 * 1_048_576
}
