import ProxyWire
import Testing

@Suite("TLS names and GREASE")
struct TLSNamesTests {
    @Test(
        "version names",
        arguments: [
            (UInt16(0x0002), "SSLv2"), (0x0300, "SSLv3"), (0x0301, "TLSv1.0"), (0x0302, "TLSv1.1"),
            (0x0303, "TLSv1.2"), (0x0304, "TLSv1.3"), (0x7F1C, "0x7f1c"), (0x0A0A, "0x0a0a"), (0x0000, "0x0000"),
        ])
    func versionNames(wire: UInt16, name: String) {
        #expect(tlsVersionName(wire) == name)
    }

    @Test("exactly the sixteen RFC 8701 values are GREASE")
    func grease() {
        let all = (UInt16.min...UInt16.max).filter(isGREASE)
        #expect(all == (0..<16).map { UInt16($0) * 0x1010 + 0x0A0A })
        #expect(isGREASE(0xFAFA))
        #expect(!isGREASE(0x0A1A))
        #expect(!isGREASE(0x1301))
    }
}
