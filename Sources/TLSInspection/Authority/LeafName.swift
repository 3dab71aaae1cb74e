import Glibc

/// The one name a minted leaf is for: the SNI host name the device sent, or the IP address it
/// connected to when it sent none. Also the key of the leaf cache.
package enum LeafName: Hashable, Sendable, CustomStringConvertible {
    /// A host name as the device sent it in SNI (an A-label form, ASCII).
    case dns(String)
    /// An IPv4 (4 bytes) or IPv6 (16 bytes) address, network order.
    case ip(bytes: [UInt8])

    /// An IP literal ("192.0.2.1", "2001:db8::1", with or without brackets) or else a host name.
    package init(host: String) {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, bare, &v4) == 1 {
            self = .ip(bytes: withUnsafeBytes(of: &v4) { Array($0) })
        } else if inet_pton(AF_INET6, bare, &v6) == 1 {
            self = .ip(bytes: withUnsafeBytes(of: &v6) { Array($0) })
        } else {
            self = .dns(host)
        }
    }

    package var description: String {
        switch self {
        case .dns(let host): return host
        case .ip(let bytes):
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            let family = bytes.count == 4 ? AF_INET : AF_INET6
            guard bytes.count == 4 || bytes.count == 16, inet_ntop(family, bytes, &text, socklen_t(text.count)) != nil
            else { return "ip(\(bytes))" }
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// Why the name cannot go into a certificate, or nil when it can.
    ///
    /// A host name must be 1...253 bytes of letters, digits, '-', '_' and '.', with no empty label:
    /// what a real client puts in SNI (RFC 6066: an A-label host name). Everything else (a comma, a
    /// space, NUL, a newline, non-ASCII, a wildcard) is refused rather than certified: no device
    /// that asked for such a name could be expecting a certificate for it.
    var problem: String? {
        switch self {
        case .ip(let bytes):
            return bytes.count == 4 || bytes.count == 16 ? nil : "an IP address is 4 or 16 bytes, not \(bytes.count)"
        case .dns(let host):
            let bytes = Array(host.utf8)
            guard (1...253).contains(bytes.count) else { return "a host name is 1 to 253 bytes, not \(bytes.count)" }
            let allowed = { (byte: UInt8) -> Bool in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                    return true
                default:
                    return false
                }
            }
            guard bytes.allSatisfy(allowed) else { return "a host name holds only letters, digits, '-', '_' and '.'" }
            guard
                !bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).contains(where: \.isEmpty)
            else { return "a host name has no empty label" }
            return nil
        }
    }
}
