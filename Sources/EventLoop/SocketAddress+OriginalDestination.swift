internal import CLibevent
internal import CProxyShims
import Glibc

extension SocketAddress {
    /// The destination a client dialled before the firewall redirected its connection here
    /// (`REDIRECT` or `DNAT`), from conntrack through `SO_ORIGINAL_DST` (IPv4) or
    /// `IP6T_SO_ORIGINAL_DST` (IPv6). An IPv4 connection accepted on a dual-stack IPv6 socket is
    /// asked at the IPv4 level too. Throws when the kernel has no record (no conntrack entry: the
    /// connection was not redirected, or the nf_conntrack module is not loaded).
    package static func originalDestination(of descriptor: Int32) throws(EventError) -> SocketAddress {
        var failure = ENOENT
        for (level, option) in [
            (Int32(SOL_IPV6), CProxyShims_IP6T_SO_ORIGINAL_DST()), (Int32(SOL_IP), CProxyShims_SO_ORIGINAL_DST()),
        ] {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            if getsockopt(descriptor, level, option, &storage, &length) == 0 {
                return SocketAddress(storage: storage, length: Int32(length))
            }
            failure = errno
        }
        throw EventError("reading the redirected connection's original destination (SO_ORIGINAL_DST)", errno: failure)
    }

    /// Marks a socket's packets with `mark` (`SO_MARK`, which needs CAP_NET_ADMIN), so the firewall
    /// rules that redirect devices' traffic into the transparent listener can exempt the proxy's own
    /// upstream connections and no connection loops back into the proxy.
    package static func setMark(_ mark: UInt32, on descriptor: Int32) throws(EventError) {
        var value = mark
        guard setsockopt(descriptor, SOL_SOCKET, SO_MARK, &value, socklen_t(MemoryLayout<UInt32>.size)) == 0 else {
            throw EventError("marking the upstream socket with \(mark) (SO_MARK, needs CAP_NET_ADMIN)")
        }
    }
}

extension SocketAddress {
    /// Where a connection a transparent listener accepted was going: its original destination
    /// after `REDIRECT` or `DNAT`, else the socket's own address (`TPROXY` keeps the original
    /// destination as the local address). A connection no rule redirected gives the listener's own
    /// address, which the caller refuses; nil only when the kernel answers neither.
    package static func capturedDestination(of descriptor: Int32) -> SocketAddress? {
        ((try? originalDestination(of: descriptor)) ?? local(of: descriptor))?.unmapped
    }

    /// An IPv4 address a dual-stack IPv6 socket shows as `::ffff:a.b.c.d`, as the IPv4 address it is
    /// (dialled, logged and compared as such); any other address as it is.
    package var unmapped: SocketAddress {
        var copy = storage
        let mapped: (address: in_addr, port: in_port_t)? = withUnsafePointer(to: &copy) { pointer in
            guard Int32(pointer.pointee.ss_family) == AF_INET6 else { return nil }
            return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                let bytes = withUnsafeBytes(of: v6.pointee.sin6_addr) { Array($0) }
                guard bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF else { return nil }
                var address = in_addr()
                withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: bytes[12..<16]) }
                return (address, v6.pointee.sin6_port)
            }
        }
        guard let mapped else { return self }
        var v4 = sockaddr_in()
        v4.sin_family = sa_family_t(AF_INET)
        v4.sin_port = mapped.port
        v4.sin_addr = mapped.address
        var result = sockaddr_storage()
        withUnsafeMutableBytes(of: &result) { target in
            withUnsafeBytes(of: v4) { target.copyMemory(from: $0) }
        }
        return SocketAddress(storage: result, length: Int32(MemoryLayout<sockaddr_in>.size))
    }
}

extension SocketAddress: Equatable {
    /// The same family, address and port (and, for IPv6, flow information and scope).
    package static func == (lhs: SocketAddress, rhs: SocketAddress) -> Bool {
        guard lhs.length == rhs.length else { return false }
        var (a, b) = (lhs.storage, rhs.storage)
        return memcmp(&a, &b, Int(lhs.length)) == 0
    }
}
