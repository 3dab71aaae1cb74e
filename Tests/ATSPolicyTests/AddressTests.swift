import Testing

@testable import ATSPolicy

@Suite("IP addresses, CIDR ranges and hosts")
struct AddressTests {
    @Test(
        "IPv4 and IPv6 parse to their canonical form",
        arguments: [
            ("127.0.0.1", "127.0.0.1"),
            ("0.0.0.0", "0.0.0.0"),
            ("255.255.255.255", "255.255.255.255"),
            ("10.9.99.100", "10.9.99.100"),  // every octet width, both ends of each
            ("1.10.100.200", "1.10.100.200"),
            ("::1", "::1"),
            ("::", "::"),
            ("2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"),
            ("2001:DB8::1", "2001:db8::1"),
            ("fe80::1", "fe80::1"),
            ("::ffff:192.0.2.1", "::ffff:192.0.2.1"),
            ("::ffff:c000:201", "::ffff:192.0.2.1"),
            ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),
            ("1:0:0:2:0:0:0:3", "1:0:0:2::3"),
        ])
    func parses(_ text: String, _ canonical: String) throws {
        let address = try #require(IPAddress(text))
        #expect(address.description == canonical)
    }

    @Test(
        "addresses from a socket's bytes in network order",
        arguments: [
            ([192, 0, 2, 10], "192.0.2.10"),
            ([0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [1], "2001:db8::1"),
            (Array(repeating: 0, count: 10) + [0xff, 0xff, 127, 0, 0, 1], "::ffff:127.0.0.1"),
        ] as [([UInt8], String)])
    func networkBytes(_ bytes: [UInt8], _ text: String) throws {
        #expect(IPAddress(networkBytes: bytes) == IPAddress(text))
        #expect(IPAddress(networkBytes: bytes)?.description == text)
    }

    @Test("any other byte count is not an address", arguments: [0, 3, 5, 15, 17])
    func networkBytesOfOtherLengths(_ count: Int) {
        #expect(IPAddress(networkBytes: Array(repeating: 1, count: count)) == nil)
    }

    @Test(
        "malformed addresses are rejected",
        arguments: [
            "256.0.0.1", "1.2.3", "1.2.3.4.5", "01.2.3.4", "1..2.3", "", "1.2.3.4.", ":::", "1::2::3", "2001:db8::g",
            "12345::", "1:2:3:4:5:6:7:8:9", ":1", "1:", "example.com", "1.2.3.-4",
        ])
    func rejects(_ text: String) {
        #expect(IPAddress(text) == nil)
    }

    @Test(
        "CIDR keys follow Apple's parsing rules",
        arguments: [
            ("10/8", "10.0.0.0/8"),
            ("192.168/16", "192.168.0.0/16"),
            ("198.51.100.0/24", "198.51.100.0/24"),
            ("198.51.100.77/24", "198.51.100.0/24"),
            ("2001:db8::/32", "2001:db8::/32"),
            ("2001:db8/32", "2001:db8::/32"),
            ("0.0.0.0/1", "0.0.0.0/1"),
            ("::/0", "::/0"),
        ])
    func cidr(_ text: String, _ canonical: String) throws {
        #expect(try AddressRange(parsing: text).description == canonical)
    }

    @Test(
        "invalid CIDR keys never parse",
        arguments: [
            ("10.0.0.0/33", AddressRange.ParseFailure.prefixTooLong(33, maximum: 32)),
            ("2001:db8::/129", .prefixTooLong(129, maximum: 128)),
            ("fe80::%lo0/10", .zoneNotSupported),
            ("10.0.0.0/", .invalidPrefixLength("")),
            ("10.0.0.0/x", .invalidPrefixLength("x")),
            ("300.0.0.0/8", .invalidAddress("300.0.0.0")),
        ])
    func invalidCIDR(_ text: String, _ failure: AddressRange.ParseFailure) {
        #expect(throws: failure) { try AddressRange(parsing: text) }
    }

    @Test("ranges never match across families")
    func families() throws {
        let v4 = try AddressRange(parsing: "0.0.0.0/0")
        let v6 = try AddressRange(parsing: "::/0")
        #expect(v4.contains(try #require(IPAddress("203.0.113.1"))))
        #expect(!v4.contains(try #require(IPAddress("::ffff:203.0.113.1"))))
        #expect(!v6.contains(try #require(IPAddress("203.0.113.1"))))
    }

    @Test(
        "hosts normalise: lowercase, brackets and zone ids dropped, trailing dot kept",
        arguments: [
            ("API.Example.COM", HostIdentity.name("api.example.com")),
            ("example.com.", .name("example.com.")),
            ("[::1]", .address(IPAddress("::1")!)),
            ("[fe80::1%en0]", .address(IPAddress("fe80::1")!)),
            ("fe80::1%en0", .address(IPAddress("fe80::1")!)),
            ("127.0.0.1", .address(IPAddress("127.0.0.1")!)),
            ("1password.com", .name("1password.com")),
        ])
    func hosts(_ text: String, _ expected: HostIdentity) throws {
        #expect(try HostIdentity(parsing: text) == expected)
    }

    @Test(
        "malformed hosts are rejected with a reason",
        arguments: [
            "", "a b", "[::1", "[1.2.3.4]", "exa$mple.com", "a:b", ".", "a..b", ".a.com", "a.com..",
        ])
    func badHosts(_ text: String) {
        #expect(throws: HostIdentity.ParseFailure.self) { try HostIdentity(parsing: text) }
    }

    @Test(
        "local names",
        arguments: [
            ("localhost", true), ("printer", true), ("printer.", true), ("nas.local", true), ("nas.local.", true),
            ("example.com", false), ("local", true), ("a.localhost.com", false), ("a.xlocal", false),
            ("NAS.Local", true),
            ("a.local.com", false),
        ])
    func localNames(_ name: String, _ local: Bool) throws {
        #expect(try HostIdentity(parsing: name).isLocalName == local)
    }
}
