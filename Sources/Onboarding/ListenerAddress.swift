/// A "host:port" address as the proxy writes its listeners (IPv6 in brackets: "[fd00::1]:8080"),
/// split into what iOS's Manual proxy settings ask for: a server and a port.
struct ListenerAddress: Equatable {
    /// The host without brackets ("192.168.1.20", "fd00::1", "mac.local").
    let host: String
    /// The port as written; empty when the address has none.
    let port: String

    init(_ address: String) {
        if address.hasPrefix("["), let close = address.firstIndex(of: "]") {
            host = String(address[address.index(after: address.startIndex)..<close])
            let rest = address[address.index(after: close)...]
            port = rest.hasPrefix(":") ? String(rest.dropFirst()) : ""
        } else if let colon = address.lastIndex(of: ":"), address.firstIndex(of: ":") == colon {
            host = String(address[..<colon])
            port = String(address[address.index(after: colon)...])
        } else {
            // No port, or a bare IPv6 address (more than one colon, no brackets).
            host = address
            port = ""
        }
    }

    /// Whether the host is the machine's own loopback: "localhost", 127.0.0.0/8 or ::1.
    var isLoopback: Bool {
        let name = host.lowercased()
        return name == "localhost" || name.hasSuffix(".localhost") || name.hasPrefix("127.") || name == "::1"
            || name == "0:0:0:0:0:0:0:1"
    }
}
