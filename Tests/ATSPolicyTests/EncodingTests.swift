import Testing
import TextFormats

@testable import ATSPolicy

@Suite("Base64, SHA-256, dates and JSON")
struct EncodingTests {
    @Test("base64 round-trips and rejects malformed input")
    func base64() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            let text = Base64.encode(bytes)
            #expect(length == 0 || Base64.decode(text) == bytes)
        }
        #expect(Base64.encode(Array("foobar".utf8)) == "Zm9vYmFy")
        #expect(Base64.decode("Zm9vYg==") == Array("foob".utf8))
        for bad in ["Zm9vYg=", "Zm9v Yg==", "Zm=vYg==", "Zm9vYg==Zm9v", "====", "Zm9vYg*=", ""] {
            #expect(Base64.decode(bad) == nil, "\(bad)")
        }
    }

    @Test(
        "SHA-256 matches FIPS 180-4 test vectors",
        arguments: [
            ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            (
                "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
            ),
        ])
    func sha256(_ input: String, _ digest: String) {
        #expect(SHA256.hex(of: Array(input.utf8)) == digest)
    }

    @Test("SHA-256 of a million 'a's")
    func sha256Long() {
        let input = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(SHA256.hex(of: input) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test(
        "RFC 3339 dates round-trip through the calendar",
        arguments: [
            (Int64(0), "1970-01-01T00:00:00Z"),
            (Int64(951_782_400), "2000-02-29T00:00:00Z"),
            (Int64(1_539_648_000), "2018-10-16T00:00:00Z"),
            (Int64(1_795_000_000), "2026-11-18T11:06:40Z"),
            (Int64(-86_400), "1969-12-31T00:00:00Z"),
        ])
    func dates(_ seconds: Int64, _ text: String) {
        #expect(DateFormat.rfc3339(seconds) == text)
        let day = text.prefix(10).split(separator: "-").map { Int($0)! }
        let midnight = DateFormat.seconds(year: day[0], month: day[1], day: day[2])
        #expect(midnight == seconds - ((seconds % 86_400) + 86_400) % 86_400)
    }

    @Test(
        "Log timestamps carry milliseconds, also before 1970",
        arguments: [
            (Int64(0), "1970-01-01T00:00:00.000Z"),
            (Int64(1_795_000_000_042), "2026-11-18T11:06:40.042Z"),
            (Int64(-1), "1969-12-31T23:59:59.999Z"),
            (Int64(253_402_300_799_999), "9999-12-31T23:59:59.999Z"),
        ])
    func timestamps(_ milliseconds: Int64, _ text: String) {
        #expect(DateFormat.rfc3339(milliseconds: milliseconds) == text)
    }

    @Test("Years past 9999 are written in full rather than cut to four digits")
    func distantYears() {
        #expect(DateFormat.rfc3339(253_402_300_800) == "10000-01-01T00:00:00Z")
    }

    @Test("JSON keeps key order and escapes strings")
    func json() {
        let value: JSONValue = .object([
            ("b", 1), ("a", .string("line\n\"quoted\"\u{1}")), ("c", .array([true, nil, .double(1.5)])),
        ])
        #expect(value.serialized == #"{"b":1,"a":"line\n\"quoted\"\u0001","c":[true,null,1.5]}"#)
        #expect(value["a"] == .string("line\n\"quoted\"\u{1}"))
        #expect(JSONValue.object([]).prettyPrinted == "{}")
    }

    @Test(
        "JSON string escapes, on the byte writer and the pretty writer alike",
        arguments: [
            ("plain ascii", #""plain ascii""#),
            ("tab\there\r\n", #""tab\there\r\n""#),
            ("back\\slash and \"quote\"", #""back\\slash and \"quote\"""#),
            ("nul \u{0} del \u{7f} esc \u{1b}", #""nul \u0000 del \u007f esc \u001b""#),
            ("line\u{2028}para\u{2029}end", #""line\u2028para\u2029end""#),
            ("é ü 日本 🙂 \u{2027}", "\"é ü 日本 🙂 \u{2027}\""),
            ("", #""""#),
        ])
    func jsonStringEscapes(_ input: String, _ expected: String) {
        #expect(JSONValue.string(input).serialized == expected)
        #expect(JSONValue.string(input).serializedBytes == Array(expected.utf8))
        #expect(JSONValue.string(input).prettyPrinted == expected)
    }

    @Test("key paths bracket domain keys and keep plist keys bare")
    func keyPaths() {
        let path = PolicyKeyPath([
            "NSAppTransportSecurity", "NSExceptionDomains", "example.com", "NSIncludesSubdomains",
        ])
        #expect(path.description == #"NSAppTransportSecurity.NSExceptionDomains["example.com"].NSIncludesSubdomains"#)
        #expect(
            PolicyKeyPath(["NSPinnedDomains", "a.com", "NSPinnedLeafIdentities"]).appending(index: 2).description
                == #"NSPinnedDomains["a.com"].NSPinnedLeafIdentities[2]"#)
        #expect(PolicyKeyPath().description == "(root)")
    }

    @Test("cipher suites look up by IANA name, OpenSSL name and id")
    func suites() {
        #expect(CipherSuite(name: "ECDHE-RSA-AES128-GCM-SHA256")?.id == 0xC02F)
        #expect(CipherSuite(name: "TLS_RSA_WITH_AES_128_CBC_SHA")?.id == 0x002F)
        #expect(CipherSuite(name: "0xc014")?.ianaName == "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA")
        #expect(CipherSuite(id: 0x1234).ianaName == "0x1234")
        #expect(CipherSuite(id: 0x009E).keyExchange == .dhe)
    }

    /// IANA's registry (RFC 5932, RFC 6367, RFC 6209) against OpenSSL's names: the suites a server
    /// may choose that used to print as bare hex.
    @Test(
        "Camellia and ARIA suites have their IANA names and look up by OpenSSL name",
        arguments: [
            (0x0041, "TLS_RSA_WITH_CAMELLIA_128_CBC_SHA", "CAMELLIA128-SHA", CipherSuite.KeyExchange.rsa),
            (0x0088, "TLS_DHE_RSA_WITH_CAMELLIA_256_CBC_SHA", "DHE-RSA-CAMELLIA256-SHA", .dhe),
            (0x00C0, "TLS_RSA_WITH_CAMELLIA_256_CBC_SHA256", "CAMELLIA256-SHA256", .rsa),
            (0xC073, "TLS_ECDHE_ECDSA_WITH_CAMELLIA_256_CBC_SHA384", "ECDHE-ECDSA-CAMELLIA256-SHA384", .ecdhe),
            (0xC076, "TLS_ECDHE_RSA_WITH_CAMELLIA_128_CBC_SHA256", "ECDHE-RSA-CAMELLIA128-SHA256", .ecdhe),
            (0xC09B, "TLS_ECDHE_PSK_WITH_CAMELLIA_256_CBC_SHA384", "ECDHE-PSK-CAMELLIA256-SHA384", .other),
            (0xC050, "TLS_RSA_WITH_ARIA_128_GCM_SHA256", "ARIA128-GCM-SHA256", .rsa),
            (0xC053, "TLS_DHE_RSA_WITH_ARIA_256_GCM_SHA384", "DHE-RSA-ARIA256-GCM-SHA384", .dhe),
            (0xC05C, "TLS_ECDHE_ECDSA_WITH_ARIA_128_GCM_SHA256", "ECDHE-ECDSA-ARIA128-GCM-SHA256", .ecdhe),
            (0xC061, "TLS_ECDHE_RSA_WITH_ARIA_256_GCM_SHA384", "ECDHE-ARIA256-GCM-SHA384", .ecdhe),
            (0xC06F, "TLS_RSA_PSK_WITH_ARIA_256_GCM_SHA384", "RSA-PSK-ARIA256-GCM-SHA384", .other),
        ])
    func camelliaAndARIA(id: Int, iana: String, openSSL: String, keyExchange: CipherSuite.KeyExchange) {
        let suite = CipherSuite(id: UInt16(id))
        #expect(suite.ianaName == iana)
        #expect(suite.openSSLName == openSSL)
        #expect(suite.keyExchange == keyExchange)
        #expect(CipherSuite(name: openSSL) == suite)
        #expect(CipherSuite(name: iana) == suite)
        // Not AES-GCM, so never what the NIAP package allows.
        #expect(!suite.isECDHEWithAESGCM)
    }
}
