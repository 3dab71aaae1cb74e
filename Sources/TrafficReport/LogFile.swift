import Foundation

/// One log file's bytes, decompressed when it was gzip (logrotate's `compress`: `atsproxy.log.2.gz`).
///
/// Compression is recognised by the gzip magic number, not by the name, so a rotated file that
/// was renamed, or a plain file that happens to end in `.gz`, is still read right.
package struct LogFile: Sendable {
    package var path: String
    package var bytes: [UInt8]
    package var wasCompressed: Bool
    /// Why a compressed file could be read only in part; the bytes before the damage are kept.
    package var damage: String?

    /// A log already in memory (plain or gzip), named `path` in warnings.
    package init(path: String, contents: [UInt8]) {
        if GzipInflater.isGzip(contents) {
            let inflated = GzipInflater.inflate(contents)
            self.init(path: path, bytes: inflated.bytes, wasCompressed: true, damage: inflated.damage)
        } else {
            self.init(path: path, bytes: contents, wasCompressed: false, damage: nil)
        }
    }

    private init(path: String, bytes: [UInt8], wasCompressed: Bool, damage: String?) {
        self.path = path
        self.bytes = bytes
        self.wasCompressed = wasCompressed
        self.damage = damage
    }

    /// Reads `path`; a missing, unreadable or non-regular file is an error that names it.
    package static func read(path: String) throws(LogFileError) -> LogFile {
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: path)
        } catch {
            throw LogFileError(path: path, reason: "no such file")
        }
        switch attributes[.type] as? FileAttributeType {
        case .typeRegular?: break
        case .typeDirectory?: throw LogFileError(path: path, reason: "is a directory, not a log file")
        default: throw LogFileError(path: path, reason: "is not a regular file")
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw LogFileError(path: path, reason: "permission denied")
        }
        defer { try? handle.close() }
        let raw: [UInt8]
        do {
            raw = [UInt8](try handle.readToEnd() ?? Data())
        } catch {
            throw LogFileError(path: path, reason: "cannot be read: \(error.localizedDescription)")
        }
        return LogFile(path: path, contents: raw)
    }
}

/// A log file that cannot be read at all: `report` stops with exit status 2, naming it.
package struct LogFileError: Error, Sendable, Equatable, CustomStringConvertible {
    package var path: String
    package var reason: String

    package init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    package var description: String { "\(path): \(reason)" }
}
