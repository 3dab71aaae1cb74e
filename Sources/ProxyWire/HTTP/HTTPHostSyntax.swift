/// Validates and normalises the host part of a request target or Host field (RFC 3986 §3.2.2):
/// a registered name, a dotted-quad IPv4 address, or an IPv6 address in brackets.
///
/// Hosts come back lowercased (they are case-insensitive, RFC 3986 §6.2.2.1) and IPv6 addresses
/// without their brackets, ready for the resolver and the ATS policy.
enum HTTPHostSyntax {
    /// Longest registered name accepted: a DNS name is at most 253 characters, plus a root dot;
    /// the rest of the room is a margin, and the cap keeps error messages and logs bounded.
    static let maximumNameLength = 255

    /// Either the normalised host or a sentence saying what is wrong with it.
    static func normalizedHost(_ bytes: ArraySlice<UInt8>) -> Result<String, HostProblem> {
        guard let first = bytes.first else { return .failure(.empty) }
        if first == UInt8(ascii: "[") {
            guard bytes.last == UInt8(ascii: "]"), bytes.count >= 2 else { return .failure(.unclosedBracket) }
            return normalizedIPv6(bytes.dropFirst().dropLast())
        }
        return normalizedName(bytes)
    }

    enum HostProblem: Error, Equatable {
        case empty
        case unclosedBracket
        case invalidIPv6
        case percentEncoded
        case invalidCharacter(UInt8)
        case tooLong
        case invalidIPv4

        var sentence: String {
            switch self {
            case .empty: "has no host"
            case .unclosedBracket: "has an IPv6 address without its closing bracket"
            case .invalidIPv6: "has an invalid IPv6 address in brackets"
            case .percentEncoded: "has a percent-encoded host name, which is not accepted"
            case .invalidCharacter(let byte): "has the invalid character \(HTTPSyntax.describe(byte)) in its host"
            case .tooLong: "has a host name longer than \(HTTPHostSyntax.maximumNameLength) characters"
            case .invalidIPv4: "has a host that looks like an IPv4 address but is not a dotted quad such as 192.0.2.1"
            }
        }
    }

    // MARK: - Registered names and IPv4

    /// reg-name limited to letters, digits, '-', '.' and '_': what DNS names use. RFC 3986
    /// would also allow sub-delims and percent-encoding, which no real host needs and which
    /// resolvers and the policy would each interpret in their own way.
    private static func normalizedName(_ bytes: ArraySlice<UInt8>) -> Result<String, HostProblem> {
        guard bytes.count <= maximumNameLength else { return .failure(.tooLong) }
        for byte in bytes {
            if byte == UInt8(ascii: "%") { return .failure(.percentEncoded) }
            guard
                HTTPSyntax.isLetter(byte) || HTTPSyntax.isDigit(byte)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
            else { return .failure(.invalidCharacter(byte)) }
        }
        // A name whose last label is a number is meant as an IPv4 address, and resolvers read
        // such names (2130706433, 0x7f.1, 127.1, 010.0.0.1) as addresses in several ways
        // (inet_aton; the WHATWG URL "ends in a number" rule). Only the one unambiguous spelling
        // is let through, so the host the policy judges is the host connected to.
        if lastLabelIsNumeric(bytes), !isDottedQuad(bytes) { return .failure(.invalidIPv4) }
        return .success(HTTPSyntax.lowercasedText(bytes))
    }

    /// Whether the label after the last dot (a single trailing dot ignored) is decimal digits,
    /// or "0x" followed by hex digits.
    private static func lastLabelIsNumeric(_ bytes: ArraySlice<UInt8>) -> Bool {
        var name = bytes
        if name.last == UInt8(ascii: ".") { name = name.dropLast() }
        let labelStart = name.lastIndex(of: UInt8(ascii: ".")).map { $0 + 1 } ?? name.startIndex
        let label = name[labelStart...]
        guard let first = label.first else { return false }
        if label.allSatisfy(HTTPSyntax.isDigit) { return true }
        guard first == UInt8(ascii: "0"), label.count >= 2,
            HTTPSyntax.lowercased(label[labelStart + 1]) == UInt8(ascii: "x")
        else {
            return false
        }
        return label.dropFirst(2).allSatisfy { HTTPSyntax.hexValue($0) != nil }
    }

    /// Four decimal parts 0–255 without leading zeros (RFC 3986 §3.2.2 dec-octet).
    static func isDottedQuad(_ bytes: ArraySlice<UInt8>) -> Bool {
        var rest = bytes
        for partNumber in 1...4 {
            let partEnd = rest.firstIndex(of: UInt8(ascii: ".")) ?? rest.endIndex
            guard isDecimalOctet(rest[..<partEnd]) else { return false }
            if partNumber == 4 { return partEnd == rest.endIndex }
            guard partEnd != rest.endIndex else { return false }
            rest = rest[(partEnd + 1)...]
        }
        return false
    }

    /// dec-octet: 0–255 in one to three digits, no leading zero.
    private static func isDecimalOctet(_ part: ArraySlice<UInt8>) -> Bool {
        guard (1...3).contains(part.count), part.allSatisfy(HTTPSyntax.isDigit) else { return false }
        guard part.count == 1 || part.first != UInt8(ascii: "0") else { return false }
        return part.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) } <= 255
    }

    // MARK: - IPv6

    /// Longest bracket content accepted: a full IPv6 address with an IPv4 tail is 45 characters;
    /// the rest is room for a zone id.
    private static let maximumIPv6Length = 64

    /// IPv6address (RFC 3986 §3.2.2, RFC 4291 §2.2) with an optional zone id (RFC 6874): `%25`
    /// followed by unreserved characters, also accepted as a bare `%` as browsers send it. The
    /// address is lowercased; the zone id is kept as sent, because interface names are
    /// case-sensitive on Linux.
    private static func normalizedIPv6(_ content: ArraySlice<UInt8>) -> Result<String, HostProblem> {
        guard content.count <= maximumIPv6Length else { return .failure(.invalidIPv6) }
        var address = content
        var zone: ArraySlice<UInt8> = []
        if let percent = content.firstIndex(of: UInt8(ascii: "%")) {
            address = content[..<percent]
            zone = content[content.index(after: percent)...]
            if zone.starts(with: Array("25".utf8)), zone.count > 2 { zone = zone.dropFirst(2) }
            guard !zone.isEmpty, zone.allSatisfy(isUnreserved) else { return .failure(.invalidIPv6) }
        }
        guard isIPv6Address(address) else { return .failure(.invalidIPv6) }
        var text = HTTPSyntax.lowercasedText(address)
        if !zone.isEmpty { text += "%" + String(decoding: zone, as: UTF8.self) }
        return .success(text)
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        HTTPSyntax.isLetter(byte) || HTTPSyntax.isDigit(byte)
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: "~")
    }

    /// Groups of one to four hex digits separated by colons, at most one "::", and optionally a
    /// dotted-quad in the last 32 bits: eight groups in all, or fewer when "::" stands for the rest.
    static func isIPv6Address(_ bytes: ArraySlice<UInt8>) -> Bool {
        let colon = UInt8(ascii: ":")
        var groups = 0
        var sawDoubleColon = false
        var index = bytes.startIndex
        if bytes.starts(with: [colon, colon]) {
            sawDoubleColon = true
            index += 2
            if index == bytes.endIndex { return true }
        }
        while true {
            let segmentEnd = bytes[index...].firstIndex(of: colon) ?? bytes.endIndex
            let segment = bytes[index..<segmentEnd]
            if segment.contains(UInt8(ascii: ".")) {
                // The IPv4 tail must be last and counts as two groups.
                guard segmentEnd == bytes.endIndex, isDottedQuad(segment) else { return false }
                groups += 2
                break
            }
            guard (1...4).contains(segment.count), segment.allSatisfy({ HTTPSyntax.hexValue($0) != nil }) else {
                return false
            }
            groups += 1
            guard groups <= 8 else { return false }
            if segmentEnd == bytes.endIndex { break }
            index = segmentEnd + 1
            if index < bytes.endIndex, bytes[index] == colon {
                guard !sawDoubleColon else { return false }
                sawDoubleColon = true
                index += 1
                if index == bytes.endIndex { break }
            } else if index == bytes.endIndex {
                return false  // a single trailing colon
            }
        }
        // "::" stands for at least one group of zeros (RFC 4291 §2.2).
        return sawDoubleColon ? groups <= 7 : groups == 8
    }
}
