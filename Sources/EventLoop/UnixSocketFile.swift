import Glibc
import POSIX

/// A listening Unix-domain stream socket at a path, for local control clients: created with the
/// given permissions, refused when another process is listening there, and unlinked by its owner.
package enum UnixSocketFile {
    /// Binds and listens at `path` with `permissions` (0660: the owner and its group), replacing a
    /// stale socket file left by a process that died, and returns the descriptor.
    package static func listen(at path: String, permissions: mode_t) throws(EventError) -> Int32 {
        guard let address = UnixSocketAddress(path) else {
            throw EventError(
                "creating the socket \(path) (a Unix socket path holds 1 to 107 bytes)", errno: ENAMETOOLONG)
        }

        var status = stat()
        if lstat(path, &status) == 0 {
            guard status.st_mode & S_IFMT == S_IFSOCK else {
                throw EventError(
                    "creating the socket \(path) (a file that is not a socket is in the way)", errno: EEXIST)
            }
            // A socket file someone answers on belongs to a running daemon; one nobody answers on
            // was left by a process that died, and is replaced.
            if isAnswering(address) {
                throw EventError("creating the socket \(path) (another process answers on it)", errno: EADDRINUSE)
            }
            unlink(path)
        }

        // Non-blocking: libevent's listener accepts until EAGAIN, which a blocking socket never says.
        let descriptor = socket(
            AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard descriptor >= 0 else { throw EventError("creating the socket \(path)") }
        let bound = address.withSockaddr { bind(descriptor, $0, $1) }
        guard bound == 0 else {
            let code = errno
            close(descriptor)
            throw EventError("binding the socket \(path)", errno: code)
        }
        // Permissions are set before listen(): nobody can connect in between.
        guard chmod(path, permissions) == 0, Glibc.listen(descriptor, 64) == 0 else {
            let code = errno
            close(descriptor)
            unlink(path)
            throw EventError("listening on the socket \(path)", errno: code)
        }
        return descriptor
    }

    private static func isAnswering(_ address: UnixSocketAddress) -> Bool {
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { return false }
        defer { close(probe) }
        return address.withSockaddr { connect(probe, $0, $1) } == 0
    }
}
