import ProxyWire
import TLSTestSupport
import Testing

/// The answer must not depend on how TCP happened to cut the stream.
@Suite("TLS scanning is independent of chunking")
struct TLSChunkingTests {
    @Test("byte at a time", arguments: TLSCaptures.allNames)
    func byteAtATime(_ name: String) throws {
        let capture = try TLSCaptures.bytes(name)
        let direction = TLSCaptures.direction(of: name)
        let whole = Scan.whole(capture, direction)
        #expect(whole != .needMoreData)
        #expect(Scan.byteAtATime(capture, direction) == whole)
    }

    @Test("two chunks, split at every offset", arguments: TLSCaptures.allNames)
    func everySplit(_ name: String) throws {
        let capture = try TLSCaptures.bytes(name)
        let direction = TLSCaptures.direction(of: name)
        let whole = Scan.whole(capture, direction)
        for offset in 1..<capture.count {
            let state = Scan.chunked(capture, direction, sizes: [offset])
            #expect(state == whole, "split at \(offset)")
            if state != whole { break }
        }
    }

    @Test("random chunk sizes (seeded)", arguments: TLSCaptures.allNames)
    func randomChunks(_ name: String) throws {
        let capture = try TLSCaptures.bytes(name)
        let direction = TLSCaptures.direction(of: name)
        let whole = Scan.whole(capture, direction)
        var generator = SplitMix64(seed: 0x5EED_0001)
        for round in 0..<200 {
            let maximum = [2, 7, 64, 600][round % 4]
            let sizes = Scan.randomSizes(covering: capture.count, maximum: maximum, using: &generator)
            let state = Scan.chunked(capture, direction, sizes: sizes)
            #expect(state == whole, "chunk sizes \(sizes)")
            if state != whole { break }
        }
    }

    @Test("hand-built records split anywhere: HelloRetryRequest, change_cipher_spec, ServerHello")
    func helloRetryRequestSequence() {
        let bytes =
            ServerHelloBuilder.helloRetryRequest.record + Wire.record(type: 20, [1]) + ServerHelloBuilder().record
        let whole = Scan.whole(bytes, .serverToClient)
        #expect(whole.serverHello?.helloRetryRequested == true)
        #expect(Scan.byteAtATime(bytes, .serverToClient) == whole)
        for offset in 1..<bytes.count {
            #expect(Scan.chunked(bytes, .serverToClient, sizes: [offset]) == whole)
        }
    }
}
