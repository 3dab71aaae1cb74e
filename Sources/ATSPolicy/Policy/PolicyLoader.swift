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
                .notAPropertyList, file: path, reason: "not a property list: \(error.reason)", location: error.location)
        }
        let policy = try TransportSecurityPolicy(root: parsed.root, settings: settings, file: path)
        return Loaded(policy: policy, path: path, format: parsed.format, sha256: SHA256.hex(of: bytes))
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

    static func readFile(_ path: String) throws(PolicyLoadError) -> [UInt8] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw PolicyLoadError(.fileNotFound, file: path, reason: "no such file")
        }
        guard !isDirectory.boolValue else {
            throw PolicyLoadError(.isDirectory, file: path, reason: "is a directory, not a policy file")
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw PolicyLoadError(.unreadable, file: path, reason: "permission denied")
        }
        // Policies are small; a huge file is a mistake (a disk image, a log) and is refused before reading.
        if let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber,
            size.intValue > maximumFileSize
        {
            throw PolicyLoadError(
                .notAPropertyList, file: path,
                reason: "is \(size.intValue) bytes; a policy is at most \(maximumFileSize / 1_048_576) MiB")
        }
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            return [UInt8](data)
        } catch {
            throw PolicyLoadError(.unreadable, file: path, reason: "cannot be read: \(error.localizedDescription)")
        }
    }

    static let maximumFileSize = 64 * 1_048_576
}
