import ProxyWire
import TLSTestSupport
import Testing

/// The hellos a proxy must refuse rather than pass on unjudged: each fails, with the reason the
/// log gives and the alert a TLS server would send, however the bytes are cut into chunks. And the
/// hellos it must still read: up to OpenSSL's own limit, over as many records as that takes, with
/// server names as Apple's and OpenSSL's clients send them.
@Suite("Unreadable ClientHellos")
struct TLSUnreadableHelloTests {
    static func scan(_ hello: UnreadableHello) -> (TLSScanState, TLSAlertDescription?) {
        var scanner = TLSHelloScanner(direction: .clientToServer)
        var state = scanner.feed(hello.bytes)
        if hello.endsStream, state == .needMoreData { state = scanner.finish() }
        return (state, scanner.failureAlert)
    }

    @Test("each unreadable hello fails with its reason and alert", arguments: UnreadableHello.all)
    func fails(hello: UnreadableHello) {
        let (state, alert) = Self.scan(hello)
        #expect(state.failureReason?.contains(hello.reason) == true, "\(state)")
        #expect(alert?.rawValue == hello.alert)
    }

    @Test("each unreadable hello fails the same way byte by byte", arguments: UnreadableHello.all)
    func failsInAnyChunking(hello: UnreadableHello) {
        var scanner = TLSHelloScanner(direction: .clientToServer)
        var state = TLSScanState.needMoreData
        for byte in hello.bytes where state == .needMoreData { state = scanner.feed([byte]) }
        if hello.endsStream, state == .needMoreData { state = scanner.finish() }
        #expect(state == Self.scan(hello).0)
    }

    @Test(
        "hellos up to OpenSSL's limit are read, in full records or many small ones",
        arguments: [(70_000, 16_384), (100_000, 16_384), (TestClientHello.largestPossible, 16_384), (70_000, 1_000)])
    func largeHellos(size: Int, fragment: Int) throws {
        let hello = TestClientHello.sized(size)
        #expect(hello.message.count == size)
        var scanner = TLSHelloScanner(direction: .clientToServer)
        let parsed = try #require(scanner.feed(hello.records(fragment: fragment)).clientHello)
        #expect(parsed.serverName == "localhost")
        #expect(parsed.cipherSuites.count == 1 + hello.extraCipherSuites)
        #expect(parsed.extensionTypes.contains(21))
    }

    @Test("one byte over OpenSSL's limit is refused as soon as the hello's header is in")
    func overTheLimit() {
        var scanner = TLSHelloScanner(direction: .clientToServer)
        let header: [UInt8] = [22, 3, 1, 0x40, 0, 1, 0x02, 0x01, 0x45]
        #expect(scanner.feed(header).failureReason?.contains("131397 bytes") == true)
        #expect(scanner.failureAlert == .illegalParameter)
    }

    @Test(
        "server names that are host names pass",
        arguments: [
            "localhost", "www.example.com", "xn--caf-dma.example", "a-b_c.example", "EXAMPLE.COM", "1.2.3.4",
            String(repeating: "a", count: 63) + ".example",
            String(repeating: "abc.", count: 62) + "abcde",  // 253 bytes
        ])
    func hostNames(name: String) throws {
        var scanner = TLSHelloScanner(direction: .clientToServer)
        let hello = try #require(scanner.feed(TestClientHello(serverName: name).records()).clientHello)
        #expect(hello.serverName == name)
        #expect(scanner.failureAlert == nil)
    }

    @Test("the alert record a refused device gets")
    func alertRecord() {
        #expect(TLSAlertDescription.unrecognizedName.fatalRecord == [21, 3, 3, 0, 2, 2, 112])
        #expect(TLSAlertDescription.decodeError.fatalRecord == [21, 3, 3, 0, 2, 2, 50])
    }
}
