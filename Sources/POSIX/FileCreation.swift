import Glibc

/// Files made with their mode in the same `open` that creates them, so a key is never readable by
/// others, not even between a write and a chmod; and the directories they go in.
package enum FileCreation {
    /// Creates `path` with `mode`, failing if it exists (O_EXCL), and writes `bytes`, synced. A
    /// failed write removes the file.
    package static func create(_ path: String, mode: mode_t, bytes: [UInt8]) throws(FileWriteError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw FileWriteError(path: path, code: errno) }
        var written = 0
        var failure: Int32 = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                failure = errno
                break
            }
            written += count
        }
        if failure == 0, fsync(descriptor) != 0 { failure = errno }
        if close(descriptor) != 0, failure == 0 { failure = errno }
        if failure != 0 {
            unlink(path)
            throw FileWriteError(path: path, code: failure)
        }
    }

    /// Creates `directory` with `mode` if missing, and its missing parents with 0755.
    package static func makeDirectory(_ directory: String, mode: mode_t) throws(FileWriteError) {
        var status = stat()
        if stat(directory, &status) == 0 {
            guard status.st_mode & S_IFMT == S_IFDIR else { throw FileWriteError(path: directory, code: ENOTDIR) }
            return
        }
        let parent = directory.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        if !parent.isEmpty { try makeDirectory(parent, mode: 0o755) }
        guard mkdir(directory, mode) == 0 || errno == EEXIST else { throw FileWriteError(path: directory, code: errno) }
    }
}

/// A file or directory that could not be made.
package struct FileWriteError: Error, Sendable, Equatable, CustomStringConvertible {
    package var path: String
    /// The `errno` of the call that failed.
    package var code: Int32

    package init(path: String, code: Int32) {
        self.path = path
        self.code = code
    }

    package var exists: Bool { code == EEXIST }
    package var reason: String { String(cString: strerror(code)) }
    package var description: String { "\(path): \(reason)" }
}
