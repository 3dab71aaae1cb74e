/// A TLS key-exchange group by its IANA codepoint (the TLS Supported Groups registry): what a
/// handshake's ECDHE, finite-field or hybrid post-quantum key exchange used. A plain value, so the
/// policy module and the log readers need no OpenSSL to name it.
public struct KeyExchangeGroup: Sendable, Hashable, CustomStringConvertible {
    public let codepoint: UInt16

    public init(codepoint: UInt16) { self.codepoint = codepoint }

    public static let secp256r1 = KeyExchangeGroup(codepoint: 0x0017)
    public static let secp384r1 = KeyExchangeGroup(codepoint: 0x0018)
    public static let secp521r1 = KeyExchangeGroup(codepoint: 0x0019)
    public static let x25519 = KeyExchangeGroup(codepoint: 0x001D)
    public static let x448 = KeyExchangeGroup(codepoint: 0x001E)
    /// The hybrids of ML-KEM with a classical curve (draft-ietf-tls-ecdhe-mlkem): iOS 26 offers
    /// X25519MLKEM768 first.
    public static let secP256r1MLKEM768 = KeyExchangeGroup(codepoint: 0x11EB)
    public static let x25519MLKEM768 = KeyExchangeGroup(codepoint: 0x11EC)
    public static let secP384r1MLKEM1024 = KeyExchangeGroup(codepoint: 0x11ED)

    /// The registry's name (`x25519`, `secp256r1`, `X25519MLKEM768`), or `0x11EC` style for a
    /// codepoint this table does not know.
    public var name: String { Self.names[codepoint] ?? CipherSuite.hex(codepoint) }

    /// Whether the group is a hybrid with ML-KEM: a key exchange that resists a quantum computer.
    public var isPostQuantum: Bool { (0x11EB...0x11ED).contains(codepoint) }

    public var description: String { name }

    /// Looks a group up by its registry name (any case) or a `0x001D` codepoint, as the log spells it.
    public init?(name: String) {
        if name.hasPrefix("0x") || name.hasPrefix("0X"), let codepoint = UInt16(name.dropFirst(2), radix: 16) {
            self.init(codepoint: codepoint)
            return
        }
        guard let codepoint = Self.names.first(where: { $0.value.lowercased() == name.lowercased() })?.key else {
            return nil
        }
        self.init(codepoint: codepoint)
    }

    /// The IANA TLS Supported Groups registry, as far as a server may pick from what an Apple or
    /// OpenSSL client offers; the spelling is the registry's own.
    static let names: [UInt16: String] = [
        0x0015: "secp224r1", 0x0016: "secp256k1", 0x0017: "secp256r1", 0x0018: "secp384r1", 0x0019: "secp521r1",
        0x001A: "brainpoolP256r1", 0x001B: "brainpoolP384r1", 0x001C: "brainpoolP512r1", 0x001D: "x25519",
        0x001E: "x448", 0x0100: "ffdhe2048", 0x0101: "ffdhe3072", 0x0102: "ffdhe4096", 0x0103: "ffdhe6144",
        0x0104: "ffdhe8192", 0x11EB: "SecP256r1MLKEM768", 0x11EC: "X25519MLKEM768", 0x11ED: "SecP384r1MLKEM1024",
    ]
}
