/// A CIDR range such as `10.0.0.0/8` or `2001:db8::/32`.
///
/// Parsing follows Apple's own rules for CIDR exception keys (SecProtocolConfiguration.m): IPv4 short forms such as
/// `10/8` are padded with `.0`, an IPv6 prefix without `::` gets `::` appended, a prefix longer than
/// the family allows is invalid, and zone-scoped forms (`fe80::%lo0/10`) are not supported.
public struct AddressRange: Sendable, Hashable, CustomStringConvertible {
    /// The network address with the host bits cleared.
    public let network: IPAddress
    public let prefixLength: Int

    public init(network: IPAddress, prefixLength: Int) {
        self.network = AddressRange.mask(network, to: prefixLength)
        self.prefixLength = prefixLength
    }

    /// Why a CIDR key is not a valid range, for `atsproxyctl check`.
    public enum ParseFailure: Error, Sendable, Equatable, CustomStringConvertible {
        case missingPrefixLength
        case invalidPrefixLength(String)
        case prefixTooLong(Int, maximum: Int)
        case zoneNotSupported
        case invalidAddress(String)

        public var description: String {
            switch self {
            case .missingPrefixLength: "no /prefix length"
            case .invalidPrefixLength(let text): "\"\(text)\" is not a prefix length"
            case .prefixTooLong(let length, let maximum): "a /\(length) prefix is longer than \(maximum) bits"
            case .zoneNotSupported: "zone ids such as %lo0 are not supported"
            case .invalidAddress(let text): "\"\(text)\" is not an IP address"
            }
        }
    }

    public init(parsing text: some StringProtocol) throws(ParseFailure) {
        let text = String(text)
        guard let slash = text.lastIndex(of: "/") else { throw .missingPrefixLength }
        let addressText = String(text[..<slash])
        let lengthText = String(text[text.index(after: slash)...])
        guard !lengthText.isEmpty, lengthText.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), lengthText.count <= 3,
            let length = Int(lengthText)
        else { throw .invalidPrefixLength(lengthText) }
        guard !addressText.contains("%") else { throw .zoneNotSupported }
        if addressText.contains(":") {
            var candidate = addressText
            if !candidate.contains("::") { candidate += "::" }
            guard let address = IPAddress(candidate) ?? IPAddress(addressText) else {
                throw .invalidAddress(addressText)
            }
            guard length <= 128 else { throw .prefixTooLong(length, maximum: 128) }
            self.init(network: address, prefixLength: length)
        } else {
            var parts = addressText.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard (1...4).contains(parts.count) else { throw .invalidAddress(addressText) }
            while parts.count < 4 { parts.append("0") }
            guard let address = IPAddress(parts.joined(separator: ".")), address.isIPv4 else {
                throw .invalidAddress(addressText)
            }
            guard length <= 32 else { throw .prefixTooLong(length, maximum: 32) }
            self.init(network: address, prefixLength: length)
        }
    }

    public func contains(_ address: IPAddress) -> Bool {
        switch (network, address) {
        case (.v4, .v4), (.v6, .v6):
            return AddressRange.mask(address, to: prefixLength) == network
        default:
            // Families never mix: an IPv4 address does not match an IPv6 range (SecProtocolConfiguration.m).
            return false
        }
    }

    public var description: String { "\(network)/\(prefixLength)" }

    /// `address` with every bit after the first `length` cleared.
    static func mask(_ address: IPAddress, to length: Int) -> IPAddress {
        switch address {
        case .v4(let value):
            let kept: UInt32 = length <= 0 ? 0 : (length >= 32 ? .max : ~(UInt32.max >> UInt32(length)))
            return .v4(value & kept)
        case .v6(let high, let low):
            let highMask: UInt64 = length <= 0 ? 0 : (length >= 64 ? .max : ~(UInt64.max >> UInt64(length)))
            let lowLength = length - 64
            let lowMask: UInt64 = lowLength <= 0 ? 0 : (lowLength >= 64 ? .max : ~(UInt64.max >> UInt64(lowLength)))
            return .v6(high: high & highMask, low: low & lowMask)
        }
    }

    /// The ranges atsproxy treats as local by default (docs/ats-rules.md, "The decisions"): loopback and
    /// link-local.
    public static let defaultLocalNetworks: [AddressRange] = [
        "127.0.0.0/8", "::1/128", "169.254.0.0/16", "fe80::/10",
    ].map { try! AddressRange(parsing: $0) }

    /// The private ranges a user may add with `local_networks` (RFC 1918 and unique-local IPv6).
    public static let privateNetworks: [AddressRange] = [
        "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7",
    ].map { try! AddressRange(parsing: $0) }
}
