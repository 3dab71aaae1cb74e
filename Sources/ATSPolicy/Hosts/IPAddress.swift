import TextFormats

/// An IPv4 or IPv6 address, parsed from the textual forms a URL or an exception key uses.
///
/// Apple compares exception keys with hosts as text; atsproxy normalises both sides instead, so
/// `2001:0db8::1` and `2001:db8::1` are the same address (docs/ats-rules.md, "Settings"; `check` notes keys that an
/// iPhone would only match when the app spells the address the same way).
public enum IPAddress: Sendable, Hashable, CustomStringConvertible {
    case v4(UInt32)
    /// The 128 bits as two halves, most significant first.
    case v6(high: UInt64, low: UInt64)

    /// Parses a dotted-quad IPv4 address (exactly four decimal parts, no leading zeros beyond "0")
    /// or an IPv6 address (RFC 4291 text forms, including `::` and an embedded IPv4 tail).
    /// Brackets and a zone id (`%en0`) are not accepted here: ``HostIdentity`` strips them.
    public init?(_ text: some StringProtocol) {
        let bytes = Array(text.utf8)
        if let v4 = IPAddress.parseIPv4(bytes[...]) {
            self = .v4(v4)
        } else if let (high, low) = IPAddress.parseIPv6(bytes) {
            self = .v6(high: high, low: low)
        } else {
            return nil
        }
    }

    /// An address from its bytes in network order: 4 for IPv4, 16 for IPv6 (as a socket address
    /// holds them); nil for any other count.
    public init?(networkBytes bytes: some Collection<UInt8>) {
        func bigEndian(_ part: some Collection<UInt8>) -> UInt64 { part.reduce(0) { $0 << 8 | UInt64($1) } }
        switch bytes.count {
        case 4: self = .v4(UInt32(bigEndian(bytes)))
        case 16: self = .v6(high: bigEndian(bytes.prefix(8)), low: bigEndian(bytes.dropFirst(8)))
        default: return nil
        }
    }

    /// The address in network byte order: 4 bytes, or 16.
    public var networkBytes: [UInt8] {
        switch self {
        case .v4(let value): (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) }
        case .v6(let high, let low):
            (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * $0)) }
                + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * $0)) }
        }
    }

    public var isIPv4: Bool {
        if case .v4 = self { return true }
        return false
    }

    /// The IPv4 address an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) stands for, and any other
    /// address as it is: a dual-stack socket reports IPv4 peers in the mapped form, and a rule about
    /// IPv4 ranges must still match them.
    public var unmapped: IPAddress {
        if case .v6(0, let low) = self, low >> 32 == 0xffff { return .v4(UInt32(truncatingIfNeeded: low)) }
        return self
    }

    /// Canonical text: dotted quad, or RFC 5952 IPv6 (lowercase, longest zero run as `::`).
    public var description: String {
        switch self {
        case .v4(let value):
            return IPAddress.dottedQuad(value)
        case .v6(let high, let low):
            let groups = (0..<8).map { index -> UInt16 in
                let half = index < 4 ? high : low
                return UInt16(truncatingIfNeeded: half >> UInt64((3 - index % 4) * 16))
            }
            // RFC 5952 §5: IPv4-mapped addresses keep the dotted quad (::ffff:192.0.2.1).
            if high == 0, low >> 32 == 0xffff {
                return "::ffff:" + IPAddress.v4(UInt32(truncatingIfNeeded: low)).description
            }
            return IPAddress.formatIPv6(groups)
        }
    }

    /// Written by hand into the string: the proxy prints every client's address for its log.
    private static func dottedQuad(_ address: UInt32) -> String {
        String(unsafeUninitializedCapacity: 15) { buffer in
            var count = 0
            for shift in stride(from: 24, through: 0, by: -8) {
                if shift != 24 {
                    buffer[count] = UInt8(ascii: ".")
                    count += 1
                }
                let part = UInt8(truncatingIfNeeded: address >> UInt32(shift))
                if part >= 100 {
                    buffer[count] = UInt8(ascii: "0") + part / 100
                    count += 1
                }
                if part >= 10 {
                    buffer[count] = UInt8(ascii: "0") + part / 10 % 10
                    count += 1
                }
                buffer[count] = UInt8(ascii: "0") + part % 10
                count += 1
            }
            return count
        }
    }

    // MARK: - Parsing

    static func parseIPv4(_ bytes: ArraySlice<UInt8>) -> UInt32? {
        var result: UInt32 = 0
        var parts = 0
        var current: UInt32 = 0
        var digits = 0
        var leadingZero = false
        for byte in bytes {
            if byte == UInt8(ascii: ".") {
                guard digits > 0, parts < 3 else { return nil }
                result = result << 8 | current
                parts += 1
                current = 0
                digits = 0
                continue
            }
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            if digits == 0 { leadingZero = byte == UInt8(ascii: "0") } else if leadingZero { return nil }
            current = current * 10 + UInt32(byte - UInt8(ascii: "0"))
            digits += 1
            guard current <= 255, digits <= 3 else { return nil }
        }
        guard parts == 3, digits > 0 else { return nil }
        return result << 8 | current
    }

    static func parseIPv6(_ bytes: [UInt8]) -> (UInt64, UInt64)? {
        guard bytes.count >= 2, bytes.contains(UInt8(ascii: ":")) else { return nil }
        var head: [UInt16] = []
        var tail: [UInt16] = []
        var sawDoubleColon = false
        var index = 0
        // A leading "::" is the only way a group list may start with a colon.
        if bytes[0] == UInt8(ascii: ":") {
            guard bytes[1] == UInt8(ascii: ":") else { return nil }
            sawDoubleColon = true
            index = 2
        }
        while index < bytes.count {
            // Find the end of this group.
            var end = index
            while end < bytes.count, bytes[end] != UInt8(ascii: ":") { end += 1 }
            let group = bytes[index..<end]
            if group.contains(UInt8(ascii: ".")) {
                // An embedded IPv4 address must be the last thing in the text.
                guard end == bytes.count, let v4 = parseIPv4(group) else { return nil }
                let groups = [UInt16(v4 >> 16), UInt16(v4 & 0xffff)]
                if sawDoubleColon { tail += groups } else { head += groups }
                index = end
                break
            }
            guard let value = parseHexGroup(group) else { return nil }
            if sawDoubleColon { tail.append(value) } else { head.append(value) }
            index = end
            if index == bytes.count { break }
            // At a colon: either one separator or the single "::".
            if index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: ":") {
                guard !sawDoubleColon else { return nil }
                sawDoubleColon = true
                index += 2
            } else {
                index += 1
                guard index < bytes.count else { return nil }  // trailing single colon
            }
        }
        let total = head.count + tail.count
        if sawDoubleColon {
            guard total <= 7 else { return nil }
        } else {
            guard total == 8 else { return nil }
        }
        let groups = head + Array(repeating: 0, count: 8 - total) + tail
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (position, group) in groups.enumerated() {
            if position < 4 { high = high << 16 | UInt64(group) } else { low = low << 16 | UInt64(group) }
        }
        return (high, low)
    }

    private static func parseHexGroup(_ group: ArraySlice<UInt8>) -> UInt16? {
        guard (1...4).contains(group.count) else { return nil }
        var value: UInt16 = 0
        for byte in group {
            guard let digit = HexDigit.value(byte) else { return nil }
            value = value << 4 | UInt16(digit)
        }
        return value
    }

    private static func formatIPv6(_ groups: [UInt16]) -> String {
        // RFC 5952: compress the longest run of two or more zero groups (the first one on a tie).
        var bestStart = -1
        var bestLength = 0
        var runStart = -1
        for index in 0...8 {
            if index < 8, groups[index] == 0 {
                if runStart < 0 { runStart = index }
            } else if runStart >= 0 {
                let length = index - runStart
                if length > bestLength, length >= 2 {
                    bestStart = runStart
                    bestLength = length
                }
                runStart = -1
            }
        }
        func hex(_ range: Range<Int>) -> String {
            groups[range].map { String($0, radix: 16) }.joined(separator: ":")
        }
        guard bestStart >= 0 else { return hex(0..<8) }
        return hex(0..<bestStart) + "::" + hex((bestStart + bestLength)..<8)
    }
}
