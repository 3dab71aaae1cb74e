import Glibc
import POSIX

/// The POSIX file work of a CA directory: reads that also report the mode, and creation that sets
/// the mode in the same `open` that makes the file, so a key is never readable by others, not even
/// between a write and a chmod.
enum AuthorityFiles {
    /// The whole file and its permission bits, read through one descriptor (the mode checked is
    /// the mode of the bytes read).
    static func read(_ path: String) throws(CertificateAuthorityError) -> (bytes: [UInt8], mode: UInt32) {
        do {
            let contents = try FileContents.read(path, maximumSize: 1 << 20)
            return (contents.bytes, contents.mode)
        } catch {
            if case .open(ENOENT) = error.problem { throw CertificateAuthorityError(path: path, problem: .missing) }
            throw CertificateAuthorityError(path: path, problem: .unreadable(error.reason))
        }
    }

    /// Creates `path` with `mode`, failing if it exists (O_EXCL), and writes `bytes`. A failed
    /// write removes the file.
    static func create(_ path: String, mode: mode_t, bytes: [UInt8]) throws(CertificateAuthorityError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else {
            let code = errno
            throw CertificateAuthorityError(path: path, problem: code == EEXIST ? .exists : .cannotWrite(message(code)))
        }
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
            throw CertificateAuthorityError(path: path, problem: .cannotWrite(message(failure)))
        }
    }

    /// Creates `directory` with `mode` if missing, and its missing parents with 0755.
    static func makeDirectory(_ directory: String, mode: mode_t) throws(CertificateAuthorityError) {
        var status = stat()
        if stat(directory, &status) == 0 {
            guard status.st_mode & S_IFMT == S_IFDIR else {
                throw CertificateAuthorityError(path: directory, problem: .cannotWrite("not a directory"))
            }
            return
        }
        let parent = directory.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        if !parent.isEmpty { try makeDirectory(parent, mode: 0o755) }
        guard mkdir(directory, mode) == 0 || errno == EEXIST else {
            throw CertificateAuthorityError(path: directory, problem: .cannotWrite(message(errno)))
        }
    }

    /// Whether anything (a file, a dangling link) is at `path`.
    static func exists(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0
    }

    static func message(_ code: Int32) -> String { String(cString: strerror(code)) }
}
