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
        do {
            try FileCreation.create(path, mode: mode, bytes: bytes)
        } catch {
            throw CertificateAuthorityError(path: path, problem: error.exists ? .exists : .cannotWrite(error.reason))
        }
    }

    /// Creates `directory` with `mode` if missing, and its missing parents with 0755.
    static func makeDirectory(_ directory: String, mode: mode_t) throws(CertificateAuthorityError) {
        do {
            try FileCreation.makeDirectory(directory, mode: mode)
        } catch {
            let reason = error.code == ENOTDIR ? "not a directory" : error.reason
            throw CertificateAuthorityError(path: error.path, problem: .cannotWrite(reason))
        }
    }

    /// Whether anything (a file, a dangling link) is at `path`.
    static func exists(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0
    }

    static func message(_ code: Int32) -> String { String(cString: strerror(code)) }
}
