import Glibc

/// A failure of the event-loop layer, with the errno and the call that failed.
public struct EventError: Error, Sendable, CustomStringConvertible {
    public var operation: String
    public var errno: Int32

    public init(_ operation: String, errno: Int32 = Glibc.errno) {
        self.operation = operation
        self.errno = errno
    }

    public var description: String {
        errno == 0 ? "\(operation) failed" : "\(operation) failed: \(String(cString: strerror(errno)))"
    }
}
