import Glibc

/// A whole file, read through one descriptor: the one way the daemon and its tools read the files
/// they are given (config, hosts, CA, certificates, keys). The mode is that of the bytes read
/// (`fstat` on the same descriptor), so a permission check cannot be raced by a swapped file.
package struct FileContents: Sendable {
    package let bytes: [UInt8]
    /// `st_mode`: the file type and permission bits.
    package let mode: UInt32

    /// Reads `path` whole. Refuses a directory or anything that is not a regular file (a FIFO or a
    /// device could block or never end) and a file larger than `maximumSize` bytes, before reading.
    /// - Throws: ``FileReadError``, naming the path and the problem.
    package static func read(_ path: String, maximumSize: Int) throws(FileReadError) -> FileContents {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { throw FileReadError(path: path, problem: .open(errno)) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw FileReadError(path: path, problem: .read(errno)) }
        switch status.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw FileReadError(path: path, problem: .isDirectory)
        default: throw FileReadError(path: path, problem: .notRegularFile)
        }
        guard Int(status.st_size) <= maximumSize else {
            throw FileReadError(path: path, problem: .tooLarge(maximumSize: maximumSize))
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(status.st_size))
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = Glibc.read(descriptor, &chunk, chunk.count)
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw FileReadError(path: path, problem: .read(errno))
            }
            bytes += chunk[..<count]
            // The file grew while being read.
            if bytes.count > maximumSize {
                throw FileReadError(path: path, problem: .tooLarge(maximumSize: maximumSize))
            }
        }
        return FileContents(bytes: bytes, mode: UInt32(status.st_mode))
    }
}

/// Why a file could not be read; each reader words it for its own file.
package struct FileReadError: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Problem: Sendable, Equatable {
        /// `open` failed with this errno (ENOENT: missing; EACCES: permission).
        case open(Int32)
        case isDirectory
        case notRegularFile
        case tooLarge(maximumSize: Int)
        /// `fstat` or `read` failed with this errno.
        case read(Int32)
    }

    package var path: String
    package var problem: Problem

    /// The problem in words, without the path.
    package var reason: String {
        switch problem {
        case .open(let code), .read(let code): Errno.message(code)
        case .isDirectory: "is a directory"
        case .notRegularFile: "is not a regular file"
        case .tooLarge(let maximumSize):
            "larger than \(maximumSize >= 1 << 20 ? "\(maximumSize >> 20) MiB" : "\(maximumSize) bytes")"
        }
    }

    package var description: String { "\(path): \(reason)" }
}
