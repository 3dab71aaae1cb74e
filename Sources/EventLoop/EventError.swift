import Glibc

/// A failure of the event-loop layer, with the errno and the call that failed.
package struct EventError: Error, Sendable, CustomStringConvertible {
    package var operation: String
    package var errno: Int32

    package init(_ operation: String, errno: Int32 = Glibc.errno) {
        self.operation = operation
        self.errno = errno
    }

    package var description: String {
        errno == 0 ? "\(operation) failed" : "\(operation) failed: \(String(cString: strerror(errno)))"
    }
}
