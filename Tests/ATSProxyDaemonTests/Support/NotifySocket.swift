import Foundation

/// A stand-in for systemd's end of `$NOTIFY_SOCKET`: a bound AF_UNIX datagram socket, at a path in
/// a directory or (for `@name`) in the abstract namespace, whose messages a test reads.
final class NotifySocket {
    /// The value to put in `$NOTIFY_SOCKET`: the path, or `@name` for an abstract socket.
    let address: String
    private let descriptor: Int32

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Binds a socket at `directory/notify.sock`, or at a fresh abstract name when `abstract`.
    init(directory: String, abstract: Bool = false) throws {
        address =
            abstract ? "@atsproxy-test-\(UUID().uuidString)" : directory + "/notify-\(UUID().uuidString.prefix(8)).sock"
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var storage = sockaddr_un()
        storage.sun_family = sa_family_t(AF_UNIX)
        var path = Array(address.utf8)
        if abstract { path[0] = 0 }
        let length = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + path.count
        withUnsafeMutableBytes(of: &storage.sun_path) { $0.copyBytes(from: path) }
        let result = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(length)) }
        }
        guard result == 0 else {
            close(descriptor)
            throw Failure(description: "bind \(address): errno \(errno)")
        }
    }

    deinit {
        close(descriptor)
        if address.hasPrefix("/") { unlink(address) }
    }

    /// The next message as text, or nil when none comes within `timeout` seconds.
    func receive(timeout: Double = 10) -> String? {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(timeout * 1000)) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        return count >= 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
    }

    /// The `KEY=VALUE` fields of a message, in order.
    static func fields(_ message: String) -> [(key: String, value: String)] {
        message.split(separator: "\n").map { line in
            let parts = line.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
        }
    }
}
