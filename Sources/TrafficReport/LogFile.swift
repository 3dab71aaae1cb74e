import Glibc
import POSIX

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
        do {
            // No size limit: a busy day's log is read whole, as it always was.
            return LogFile(path: path, contents: try FileContents.read(path, maximumSize: .max).bytes)
        } catch {
            let reason =
                switch error.problem {
                case .open(ENOENT): "no such file"
                case .open(EACCES): "permission denied"
                case .isDirectory: "is a directory, not a log file"
                case .notRegularFile: "is not a regular file"
                default: "cannot be read: \(error.reason)"
                }
            throw LogFileError(path: path, reason: reason)
        }
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
