import EventLoop
import Testing

/// A captured connection's destination on a dual-stack listener (`TPROXY`'s own address) is an
/// IPv4 address shown as `::ffff:a.b.c.d`: dialled, logged and compared as the IPv4 address it is.
@Suite("SocketAddress.unmapped")
struct UnmappedAddressTests {
    @Test(
        "a v4-mapped address becomes IPv4 with its port; every other address stays as it is",
        arguments: [
            ("[::ffff:10.78.0.3]:443", "10.78.0.3:443"), ("[::ffff:192.0.2.1]:8080", "192.0.2.1:8080"),
            ("10.78.0.3:443", "10.78.0.3:443"), ("[2001:db8::1]:443", "[2001:db8::1]:443"),
            ("[::1]:443", "[::1]:443"), ("[64:ff9b::a00:1]:443", "[64:ff9b::a00:1]:443"),
        ])
    func unmapped(given: String, expected: String) throws {
        let address = try SocketAddress(parsing: given)
        #expect(address.unmapped.description == expected)
        #expect(address.unmapped.port == address.port)
    }
}
