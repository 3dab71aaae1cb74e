import ATSPolicy
import Glibc

/// The addresses assigned to this host's interfaces, read with `getifaddrs` each time they are
/// asked for: only a request to a wildcard listener's port asks (``DestinationRules``), which is
/// rare enough that a fresh read, which sees addresses added since start, costs nothing that matters.
package enum HostInterfaces {
    package static func addresses() -> [IPAddress] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var found: [IPAddress] = []
        for entry in sequence(first: first, next: { $0.pointee.ifa_next }) {
            guard let socketAddress = entry.pointee.ifa_addr else { continue }
            switch Int32(socketAddress.pointee.sa_family) {
            case AF_INET:
                socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                    withUnsafeBytes(of: pointer.pointee.sin_addr) { found.append(IPAddress(networkBytes: $0)!) }
                }
            case AF_INET6:
                socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                    withUnsafeBytes(of: pointer.pointee.sin6_addr) { found.append(IPAddress(networkBytes: $0)!) }
                }
            default:
                continue
            }
        }
        return found
    }
}
