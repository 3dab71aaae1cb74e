import Glibc

/// A Unix-domain socket address (`sockaddr_un`) built from its text, once for every caller: the
/// control socket's listener and client, and systemd's notify socket.
package struct UnixSocketAddress: Sendable, Equatable {
    /// The address bytes as `bind`, `connect` and `sendto` take them: the family, then the path,
    /// and exactly as long as they are.
    package let bytes: [UInt8]

    /// An absolute or relative filesystem path (1 to 107 bytes), or, with `allowsAbstract`, `@name`
    /// in the abstract namespace (the `@` becomes a NUL and the address ends at the name, with no
    /// terminator: abstract names are byte strings). nil when the text cannot be one.
    package init?(_ text: String, allowsAbstract: Bool = false) {
        var path = Array(text.utf8)
        guard !path.isEmpty, !path.contains(0) || (allowsAbstract && path.first == UInt8(ascii: "@")) else {
            return nil
        }
        if allowsAbstract, path.first == UInt8(ascii: "@") { path[0] = 0 } else { path.append(0) }
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)!
        guard path.count > 1, path.count <= MemoryLayout<sockaddr_un>.size - pathOffset else { return nil }
        var bytes = [UInt8](repeating: 0, count: pathOffset + path.count)
        withUnsafeBytes(of: sa_family_t(AF_UNIX)) { family in
            for (index, byte) in family.enumerated() { bytes[index] = byte }
        }
        bytes.replaceSubrange(pathOffset..., with: path)
        self.bytes = bytes
    }

    /// Calls `body` with the address as a `sockaddr` pointer and its length.
    package func withSockaddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        bytes.withUnsafeBytes { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
    }
}
