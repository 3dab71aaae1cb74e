import Glibc
import POSIX

/// Names to addresses in /etc/hosts format (`--hosts-file`), consulted before the system resolver.
///
/// Each line is an address followed by names; `#` starts a comment. The first line that names a
/// host wins, as in /etc/hosts. Lines are checked when the file is read, so a typo is reported
/// with its line number instead of silently leaving a name to DNS.
package struct HostsTable: Sendable, Equatable {
    /// The addresses for each name (lowercased, without a trailing dot), in file order.
    private var addresses: [String: [String]] = [:]
    package let path: String

    package struct ReadError: Error, CustomStringConvertible, Sendable {
        package var path: String
        package var line: Int?
        package var reason: String
        package var description: String { "\(path)\(line.map { ":\($0)" } ?? ""): \(reason)" }
    }

    package init(path: String, text: String) throws(ReadError) {
        self.path = path
        var seen: Set<String> = []
        // Split as bytes, as glibc reads /etc/hosts: as Characters, "\r\n" is one grapheme that is
        // neither "\n" nor "\r", so a CRLF file would be one line, and a space followed by a
        // combining mark would not separate.
        for (index, rawLine) in Array(text.utf8).split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            .enumerated()
        {
            let line = rawLine.prefix { $0 != UInt8(ascii: "#") }
            let fields = line.split(whereSeparator: {
                $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r")
            })
            .map { String(decoding: $0, as: UTF8.self) }
            guard let address = fields.first else { continue }
            guard HostsTable.isNumericAddress(address) else {
                throw ReadError(path: path, line: index + 1, reason: "\"\(address)\" is not an IPv4 or IPv6 address")
            }
            guard fields.count > 1 else {
                throw ReadError(path: path, line: index + 1, reason: "the address \(address) names no host")
            }
            for name in fields.dropFirst() {
                let key = HostsTable.normalized(name)
                // An address listed for the same name on a later line adds to it, as getaddrinfo does.
                if seen.insert(key + " " + address).inserted { addresses[key, default: []].append(address) }
            }
        }
    }

    /// Reads and checks the file.
    package static func load(path: String) throws(ReadError) -> HostsTable {
        let bytes: [UInt8]
        do {
            bytes = try FileContents.read(path, maximumSize: 16 << 20).bytes
        } catch {
            throw ReadError(path: path, line: nil, reason: error.reason)
        }
        return try HostsTable(path: path, text: String(decoding: bytes, as: UTF8.self))
    }

    /// The addresses listed for `host`, or nil when the file does not name it.
    package func addresses(for host: String) -> [String]? { addresses[HostsTable.normalized(host)] }

    package var isEmpty: Bool { addresses.isEmpty }

    private static func normalized(_ name: String) -> String {
        var name = name.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        return name
    }

    private static func isNumericAddress(_ text: String) -> Bool {
        // inet_pton reads up to the first NUL: "::\0junk" would pass as "::" and be kept whole,
        // so the dialer would be handed something other than what was checked.
        guard !text.utf8.contains(0) else { return false }
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }
}
