internal import CLibevent
import Glibc

/// An IPv4 or IPv6 socket address, parsed the way `--listen` takes it: `127.0.0.1:8080`, `[::1]:8080`.
package struct SocketAddress: Sendable, CustomStringConvertible {
    var storage = sockaddr_storage()
    var length: Int32

    package init(parsing text: String) throws(EventError) {
        // libevent refuses port 0, which tests and `--listen 127.0.0.1:0` use to let the kernel pick:
        // parse with port 1, then clear it.
        let anyPort = text.hasSuffix(":0")
        let parsed = anyPort ? String(text.dropLast()) + "1" : text
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                evutil_parse_sockaddr_port(parsed, $0, &length)
            }
        }
        guard status == 0 else { throw EventError("parsing the address \"\(text)\"", errno: EINVAL) }
        self.storage = storage
        self.length = length
        if anyPort { setPort(0) }
    }

    private mutating func setPort(_ port: UInt16) {
        withUnsafeMutablePointer(to: &storage) { pointer in
            switch Int32(pointer.pointee.ss_family) {
            case AF_INET:
                pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_port = port.bigEndian }
            case AF_INET6:
                pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_port = port.bigEndian }
            default: break
            }
        }
    }

    init(storage: sockaddr_storage, length: Int32) {
        self.storage = storage
        self.length = length
    }

    /// The bound address of a socket (after binding to port 0, the port the kernel chose).
    static func local(of descriptor: Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return status == 0 ? SocketAddress(storage: storage, length: Int32(length)) : nil
    }

    package var port: UInt16 {
        var copy = storage
        return withUnsafePointer(to: &copy) { pointer in
            switch Int32(pointer.pointee.ss_family) {
            case AF_INET:
                pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
            case AF_INET6:
                pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    UInt16(bigEndian: $0.pointee.sin6_port)
                }
            default: 0
            }
        }
    }

    /// The address in network byte order, 4 bytes for IPv4 and 16 for IPv6 (empty for any other
    /// family), lent to `body`: what an `IPAddress` is built from without printing and parsing it.
    package func withAddressBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        var copy = storage
        return try withUnsafePointer(to: &copy) { pointer in
            switch Int32(pointer.pointee.ss_family) {
            case AF_INET:
                return try pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    try withUnsafeBytes(of: $0.pointee.sin_addr, body)
                }
            case AF_INET6:
                return try pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    try withUnsafeBytes(of: $0.pointee.sin6_addr, body)
                }
            default:
                return try body(UnsafeRawBufferPointer(start: nil, count: 0))
            }
        }
    }

    /// The numeric host without brackets or port (`127.0.0.1`, `::1`), or nil if it cannot be printed.
    package var host: String? {
        var copy = storage
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        let status = withUnsafePointer(to: &copy) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, socklen_t(length), &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST)
            }
        }
        guard status == 0 else { return nil }
        return host.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// `127.0.0.1:8080` or `[::1]:8080`.
    package var description: String {
        guard let host else { return "?" }
        return Int32(storage.ss_family) == AF_INET6 ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
