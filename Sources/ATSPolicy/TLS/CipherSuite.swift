/// A TLS cipher suite by IANA id, with what the ATS rules need to know about it.
public struct CipherSuite: Sendable, Hashable, CustomStringConvertible {
    public let id: UInt16

    public init(id: UInt16) { self.id = id }

    public enum KeyExchange: String, Sendable {
        /// TLS 1.3 suites: forward secret by design, key exchange negotiated separately.
        case tls13
        case ecdhe
        case dhe
        /// Static RSA key transport: not forward secret.
        case rsa
        case other
    }

    /// The IANA name, or `0xC02F` style for suites this table does not know.
    public var ianaName: String { CipherSuite.catalogue[id]?.iana ?? CipherSuite.hex(id) }
    /// The OpenSSL name (what `SSL_CIPHER_get_name` prints), or nil when unknown.
    public var openSSLName: String? { CipherSuite.catalogue[id]?.openSSL }
    public var keyExchange: KeyExchange { CipherSuite.catalogue[id]?.keyExchange ?? .other }
    /// The cryptographic property (DHE counts). ATS's "forward secrecy" is narrower, ECDHE only, and
    /// is expressed by the cipher profiles' lists, not by this.
    public var isForwardSecret: Bool { keyExchange == .tls13 || keyExchange == .ecdhe || keyExchange == .dhe }

    /// Whether RFC 9113 allows the suite under HTTP/2 on TLS 1.2 (§9.2.2 and appendix A, whose block
    /// list is every suite that is not an ephemeral key exchange with an AEAD cipher).
    public var isAllowedUnderHTTP2: Bool {
        guard keyExchange == .tls13 || keyExchange == .ecdhe || keyExchange == .dhe else { return false }
        return ["_GCM_", "CHACHA20_POLY1305", "_CCM"].contains { ianaName.contains($0) }
    }

    /// AES-GCM with ECDHE and a SHA-256 or stronger PRF: what the NIAP FCP_v2.1 package allows in TLS 1.2.
    public var isECDHEWithAESGCM: Bool { CipherSuite.catalogue[id]?.isECDHEAESGCM ?? false }

    public var description: String { ianaName }

    /// `0xC02F`.
    public var hexID: String { CipherSuite.hex(id) }

    static func hex(_ id: UInt16) -> String {
        let digits = String(id, radix: 16, uppercase: true)
        return "0x" + String(repeating: "0", count: 4 - digits.count) + digits
    }

    /// Looks a suite up by IANA name, OpenSSL name or `0xC02F` id, as logs and flags spell them.
    public init?(name: String) {
        if name.hasPrefix("0x") || name.hasPrefix("0X"), let id = UInt16(name.dropFirst(2), radix: 16) {
            self.init(id: id)
            return
        }
        guard let id = CipherSuite.idsByName[name] else { return nil }
        self.init(id: id)
    }

    struct Entry: Sendable {
        let iana: String
        let openSSL: String
        let keyExchange: KeyExchange
        var isECDHEAESGCM: Bool { keyExchange == .ecdhe && iana.contains("_AES_") && iana.contains("_GCM_") }
    }

    /// Every suite an Apple client offers or a misconfigured server commonly picks.
    static let catalogue: [UInt16: Entry] = [
        0x1301: Entry(iana: "TLS_AES_128_GCM_SHA256", openSSL: "TLS_AES_128_GCM_SHA256", keyExchange: .tls13),
        0x1302: Entry(iana: "TLS_AES_256_GCM_SHA384", openSSL: "TLS_AES_256_GCM_SHA384", keyExchange: .tls13),
        0x1303: Entry(
            iana: "TLS_CHACHA20_POLY1305_SHA256", openSSL: "TLS_CHACHA20_POLY1305_SHA256", keyExchange: .tls13),
        0xC02C: Entry(
            iana: "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", openSSL: "ECDHE-ECDSA-AES256-GCM-SHA384",
            keyExchange: .ecdhe),
        0xC02B: Entry(
            iana: "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", openSSL: "ECDHE-ECDSA-AES128-GCM-SHA256",
            keyExchange: .ecdhe),
        0xCCA9: Entry(
            iana: "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", openSSL: "ECDHE-ECDSA-CHACHA20-POLY1305",
            keyExchange: .ecdhe),
        0xC030: Entry(
            iana: "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", openSSL: "ECDHE-RSA-AES256-GCM-SHA384", keyExchange: .ecdhe),
        0xC02F: Entry(
            iana: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", openSSL: "ECDHE-RSA-AES128-GCM-SHA256", keyExchange: .ecdhe),
        0xCCA8: Entry(
            iana: "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", openSSL: "ECDHE-RSA-CHACHA20-POLY1305",
            keyExchange: .ecdhe),
        0xC024: Entry(
            iana: "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384", openSSL: "ECDHE-ECDSA-AES256-SHA384", keyExchange: .ecdhe),
        0xC023: Entry(
            iana: "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", openSSL: "ECDHE-ECDSA-AES128-SHA256", keyExchange: .ecdhe),
        0xC028: Entry(
            iana: "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384", openSSL: "ECDHE-RSA-AES256-SHA384", keyExchange: .ecdhe),
        0xC027: Entry(
            iana: "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", openSSL: "ECDHE-RSA-AES128-SHA256", keyExchange: .ecdhe),
        0xC00A: Entry(
            iana: "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", openSSL: "ECDHE-ECDSA-AES256-SHA", keyExchange: .ecdhe),
        0xC009: Entry(
            iana: "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", openSSL: "ECDHE-ECDSA-AES128-SHA", keyExchange: .ecdhe),
        0xC014: Entry(iana: "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", openSSL: "ECDHE-RSA-AES256-SHA", keyExchange: .ecdhe),
        0xC013: Entry(iana: "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", openSSL: "ECDHE-RSA-AES128-SHA", keyExchange: .ecdhe),
        0xC008: Entry(
            iana: "TLS_ECDHE_ECDSA_WITH_3DES_EDE_CBC_SHA", openSSL: "ECDHE-ECDSA-DES-CBC3-SHA", keyExchange: .ecdhe),
        0xC012: Entry(
            iana: "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", openSSL: "ECDHE-RSA-DES-CBC3-SHA", keyExchange: .ecdhe),
        0xC007: Entry(iana: "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA", openSSL: "ECDHE-ECDSA-RC4-SHA", keyExchange: .ecdhe),
        0xC011: Entry(iana: "TLS_ECDHE_RSA_WITH_RC4_128_SHA", openSSL: "ECDHE-RSA-RC4-SHA", keyExchange: .ecdhe),
        0x009D: Entry(iana: "TLS_RSA_WITH_AES_256_GCM_SHA384", openSSL: "AES256-GCM-SHA384", keyExchange: .rsa),
        0x009C: Entry(iana: "TLS_RSA_WITH_AES_128_GCM_SHA256", openSSL: "AES128-GCM-SHA256", keyExchange: .rsa),
        0x003D: Entry(iana: "TLS_RSA_WITH_AES_256_CBC_SHA256", openSSL: "AES256-SHA256", keyExchange: .rsa),
        0x003C: Entry(iana: "TLS_RSA_WITH_AES_128_CBC_SHA256", openSSL: "AES128-SHA256", keyExchange: .rsa),
        0x0035: Entry(iana: "TLS_RSA_WITH_AES_256_CBC_SHA", openSSL: "AES256-SHA", keyExchange: .rsa),
        0x002F: Entry(iana: "TLS_RSA_WITH_AES_128_CBC_SHA", openSSL: "AES128-SHA", keyExchange: .rsa),
        0x000A: Entry(iana: "TLS_RSA_WITH_3DES_EDE_CBC_SHA", openSSL: "DES-CBC3-SHA", keyExchange: .rsa),
        0x0005: Entry(iana: "TLS_RSA_WITH_RC4_128_SHA", openSSL: "RC4-SHA", keyExchange: .rsa),
        0x0004: Entry(iana: "TLS_RSA_WITH_RC4_128_MD5", openSSL: "RC4-MD5", keyExchange: .rsa),
        0x0001: Entry(iana: "TLS_RSA_WITH_NULL_MD5", openSSL: "NULL-MD5", keyExchange: .rsa),
        0x0002: Entry(iana: "TLS_RSA_WITH_NULL_SHA", openSSL: "NULL-SHA", keyExchange: .rsa),
        0x003B: Entry(iana: "TLS_RSA_WITH_NULL_SHA256", openSSL: "NULL-SHA256", keyExchange: .rsa),
        0x009E: Entry(
            iana: "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", openSSL: "DHE-RSA-AES128-GCM-SHA256", keyExchange: .dhe),
        0x009F: Entry(
            iana: "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384", openSSL: "DHE-RSA-AES256-GCM-SHA384", keyExchange: .dhe),
        0xCCAA: Entry(
            iana: "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256", openSSL: "DHE-RSA-CHACHA20-POLY1305", keyExchange: .dhe),
        0x0067: Entry(iana: "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256", openSSL: "DHE-RSA-AES128-SHA256", keyExchange: .dhe),
        0x006B: Entry(iana: "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256", openSSL: "DHE-RSA-AES256-SHA256", keyExchange: .dhe),
        0x0033: Entry(iana: "TLS_DHE_RSA_WITH_AES_128_CBC_SHA", openSSL: "DHE-RSA-AES128-SHA", keyExchange: .dhe),
        0x0039: Entry(iana: "TLS_DHE_RSA_WITH_AES_256_CBC_SHA", openSSL: "DHE-RSA-AES256-SHA", keyExchange: .dhe),
        0x0016: Entry(iana: "TLS_DHE_RSA_WITH_3DES_EDE_CBC_SHA", openSSL: "DHE-RSA-DES-CBC3-SHA", keyExchange: .dhe),
        0xC0AC: Entry(iana: "TLS_ECDHE_ECDSA_WITH_AES_128_CCM", openSSL: "ECDHE-ECDSA-AES128-CCM", keyExchange: .ecdhe),
        0xC0AD: Entry(iana: "TLS_ECDHE_ECDSA_WITH_AES_256_CCM", openSSL: "ECDHE-ECDSA-AES256-CCM", keyExchange: .ecdhe),
        0x1304: Entry(iana: "TLS_AES_128_CCM_SHA256", openSSL: "TLS_AES_128_CCM_SHA256", keyExchange: .tls13),
        0x1305: Entry(iana: "TLS_AES_128_CCM_8_SHA256", openSSL: "TLS_AES_128_CCM_8_SHA256", keyExchange: .tls13),
        // Camellia (RFC 5932, RFC 6367) and ARIA (RFC 6209): no Apple client offers them, but servers
        // choose them, and the server facts should name them. Anonymous and PSK suites count as `other`:
        // no certificate, nothing ATS could judge.
        0x0041: Entry(iana: "TLS_RSA_WITH_CAMELLIA_128_CBC_SHA", openSSL: "CAMELLIA128-SHA", keyExchange: .rsa),
        0x0084: Entry(iana: "TLS_RSA_WITH_CAMELLIA_256_CBC_SHA", openSSL: "CAMELLIA256-SHA", keyExchange: .rsa),
        0x00BA: Entry(iana: "TLS_RSA_WITH_CAMELLIA_128_CBC_SHA256", openSSL: "CAMELLIA128-SHA256", keyExchange: .rsa),
        0x00C0: Entry(iana: "TLS_RSA_WITH_CAMELLIA_256_CBC_SHA256", openSSL: "CAMELLIA256-SHA256", keyExchange: .rsa),
        0x0044: Entry(
            iana: "TLS_DHE_DSS_WITH_CAMELLIA_128_CBC_SHA", openSSL: "DHE-DSS-CAMELLIA128-SHA", keyExchange: .dhe),
        0x0045: Entry(
            iana: "TLS_DHE_RSA_WITH_CAMELLIA_128_CBC_SHA", openSSL: "DHE-RSA-CAMELLIA128-SHA", keyExchange: .dhe),
        0x0087: Entry(
            iana: "TLS_DHE_DSS_WITH_CAMELLIA_256_CBC_SHA", openSSL: "DHE-DSS-CAMELLIA256-SHA", keyExchange: .dhe),
        0x0088: Entry(
            iana: "TLS_DHE_RSA_WITH_CAMELLIA_256_CBC_SHA", openSSL: "DHE-RSA-CAMELLIA256-SHA", keyExchange: .dhe),
        0x00BD: Entry(
            iana: "TLS_DHE_DSS_WITH_CAMELLIA_128_CBC_SHA256", openSSL: "DHE-DSS-CAMELLIA128-SHA256", keyExchange: .dhe),
        0x00BE: Entry(
            iana: "TLS_DHE_RSA_WITH_CAMELLIA_128_CBC_SHA256", openSSL: "DHE-RSA-CAMELLIA128-SHA256", keyExchange: .dhe),
        0x00C3: Entry(
            iana: "TLS_DHE_DSS_WITH_CAMELLIA_256_CBC_SHA256", openSSL: "DHE-DSS-CAMELLIA256-SHA256", keyExchange: .dhe),
        0x00C4: Entry(
            iana: "TLS_DHE_RSA_WITH_CAMELLIA_256_CBC_SHA256", openSSL: "DHE-RSA-CAMELLIA256-SHA256", keyExchange: .dhe),
        0x0046: Entry(
            iana: "TLS_DH_anon_WITH_CAMELLIA_128_CBC_SHA", openSSL: "ADH-CAMELLIA128-SHA", keyExchange: .other),
        0x0089: Entry(
            iana: "TLS_DH_anon_WITH_CAMELLIA_256_CBC_SHA", openSSL: "ADH-CAMELLIA256-SHA", keyExchange: .other),
        0x00BF: Entry(
            iana: "TLS_DH_anon_WITH_CAMELLIA_128_CBC_SHA256", openSSL: "ADH-CAMELLIA128-SHA256", keyExchange: .other),
        0x00C5: Entry(
            iana: "TLS_DH_anon_WITH_CAMELLIA_256_CBC_SHA256", openSSL: "ADH-CAMELLIA256-SHA256", keyExchange: .other),
        0xC072: Entry(
            iana: "TLS_ECDHE_ECDSA_WITH_CAMELLIA_128_CBC_SHA256", openSSL: "ECDHE-ECDSA-CAMELLIA128-SHA256",
            keyExchange: .ecdhe),
        0xC073: Entry(
            iana: "TLS_ECDHE_ECDSA_WITH_CAMELLIA_256_CBC_SHA384", openSSL: "ECDHE-ECDSA-CAMELLIA256-SHA384",
            keyExchange: .ecdhe),
        0xC076: Entry(
            iana: "TLS_ECDHE_RSA_WITH_CAMELLIA_128_CBC_SHA256", openSSL: "ECDHE-RSA-CAMELLIA128-SHA256",
            keyExchange: .ecdhe),
        0xC077: Entry(
            iana: "TLS_ECDHE_RSA_WITH_CAMELLIA_256_CBC_SHA384", openSSL: "ECDHE-RSA-CAMELLIA256-SHA384",
            keyExchange: .ecdhe),
        0xC094: Entry(
            iana: "TLS_PSK_WITH_CAMELLIA_128_CBC_SHA256", openSSL: "PSK-CAMELLIA128-SHA256", keyExchange: .other),
        0xC095: Entry(
            iana: "TLS_PSK_WITH_CAMELLIA_256_CBC_SHA384", openSSL: "PSK-CAMELLIA256-SHA384", keyExchange: .other),
        0xC096: Entry(
            iana: "TLS_DHE_PSK_WITH_CAMELLIA_128_CBC_SHA256", openSSL: "DHE-PSK-CAMELLIA128-SHA256", keyExchange: .other
        ),
        0xC097: Entry(
            iana: "TLS_DHE_PSK_WITH_CAMELLIA_256_CBC_SHA384", openSSL: "DHE-PSK-CAMELLIA256-SHA384", keyExchange: .other
        ),
        0xC098: Entry(
            iana: "TLS_RSA_PSK_WITH_CAMELLIA_128_CBC_SHA256", openSSL: "RSA-PSK-CAMELLIA128-SHA256", keyExchange: .other
        ),
        0xC099: Entry(
            iana: "TLS_RSA_PSK_WITH_CAMELLIA_256_CBC_SHA384", openSSL: "RSA-PSK-CAMELLIA256-SHA384", keyExchange: .other
        ),
        0xC09A: Entry(
            iana: "TLS_ECDHE_PSK_WITH_CAMELLIA_128_CBC_SHA256", openSSL: "ECDHE-PSK-CAMELLIA128-SHA256",
            keyExchange: .other),
        0xC09B: Entry(
            iana: "TLS_ECDHE_PSK_WITH_CAMELLIA_256_CBC_SHA384", openSSL: "ECDHE-PSK-CAMELLIA256-SHA384",
            keyExchange: .other),
        0xC050: Entry(iana: "TLS_RSA_WITH_ARIA_128_GCM_SHA256", openSSL: "ARIA128-GCM-SHA256", keyExchange: .rsa),
        0xC051: Entry(iana: "TLS_RSA_WITH_ARIA_256_GCM_SHA384", openSSL: "ARIA256-GCM-SHA384", keyExchange: .rsa),
        0xC052: Entry(
            iana: "TLS_DHE_RSA_WITH_ARIA_128_GCM_SHA256", openSSL: "DHE-RSA-ARIA128-GCM-SHA256", keyExchange: .dhe),
        0xC053: Entry(
            iana: "TLS_DHE_RSA_WITH_ARIA_256_GCM_SHA384", openSSL: "DHE-RSA-ARIA256-GCM-SHA384", keyExchange: .dhe),
        0xC056: Entry(
            iana: "TLS_DHE_DSS_WITH_ARIA_128_GCM_SHA256", openSSL: "DHE-DSS-ARIA128-GCM-SHA256", keyExchange: .dhe),
        0xC057: Entry(
            iana: "TLS_DHE_DSS_WITH_ARIA_256_GCM_SHA384", openSSL: "DHE-DSS-ARIA256-GCM-SHA384", keyExchange: .dhe),
        0xC05C: Entry(
            iana: "TLS_ECDHE_ECDSA_WITH_ARIA_128_GCM_SHA256", openSSL: "ECDHE-ECDSA-ARIA128-GCM-SHA256",
            keyExchange: .ecdhe),
        0xC05D: Entry(
            iana: "TLS_ECDHE_ECDSA_WITH_ARIA_256_GCM_SHA384", openSSL: "ECDHE-ECDSA-ARIA256-GCM-SHA384",
            keyExchange: .ecdhe),
        0xC060: Entry(
            iana: "TLS_ECDHE_RSA_WITH_ARIA_128_GCM_SHA256", openSSL: "ECDHE-ARIA128-GCM-SHA256", keyExchange: .ecdhe),
        0xC061: Entry(
            iana: "TLS_ECDHE_RSA_WITH_ARIA_256_GCM_SHA384", openSSL: "ECDHE-ARIA256-GCM-SHA384", keyExchange: .ecdhe),
        0xC06A: Entry(iana: "TLS_PSK_WITH_ARIA_128_GCM_SHA256", openSSL: "PSK-ARIA128-GCM-SHA256", keyExchange: .other),
        0xC06B: Entry(iana: "TLS_PSK_WITH_ARIA_256_GCM_SHA384", openSSL: "PSK-ARIA256-GCM-SHA384", keyExchange: .other),
        0xC06C: Entry(
            iana: "TLS_DHE_PSK_WITH_ARIA_128_GCM_SHA256", openSSL: "DHE-PSK-ARIA128-GCM-SHA256", keyExchange: .other),
        0xC06D: Entry(
            iana: "TLS_DHE_PSK_WITH_ARIA_256_GCM_SHA384", openSSL: "DHE-PSK-ARIA256-GCM-SHA384", keyExchange: .other),
        0xC06E: Entry(
            iana: "TLS_RSA_PSK_WITH_ARIA_128_GCM_SHA256", openSSL: "RSA-PSK-ARIA128-GCM-SHA256", keyExchange: .other),
        0xC06F: Entry(
            iana: "TLS_RSA_PSK_WITH_ARIA_256_GCM_SHA384", openSSL: "RSA-PSK-ARIA256-GCM-SHA384", keyExchange: .other),
    ]

    static let idsByName: [String: UInt16] = {
        var names: [String: UInt16] = [:]
        for (id, entry) in catalogue {
            names[entry.iana] = id
            names[entry.openSSL] = id
        }
        return names
    }()
}

extension CipherSuite {
    static func list(_ ids: [UInt16]) -> [CipherSuite] { ids.map(CipherSuite.init(id:)) }
}
