@testable import ProxyWire
import Testing

/// The head scanner takes runs of plain bytes (a method, a target, field names and values) in
/// one step. Taking every byte on its own is the reference: both must reach the same result,
/// reasons included, wherever the input is cut and wherever the size limit falls.
@Suite("Runs of plain bytes parse as byte-by-byte scanning does")
struct HTTPPlainRunTests {
    static let requestSeeds: [String] = HTTPFuzzTests.requestSeeds + [
        "CONNECT localhost:46783 HTTP/1.1\r\nHost: localhost:46783\r\nUser-Agent: a b\tc \t \r\nX-Empty:\r\nX-Obs: caf\u{E9}\r\n\r\nbody",
        "GET http://example.com/a/very/long/path?with=a&query=string HTTP/1.1\r\nAccept:   */*   \r\n\n",
        "\r\n\nPOST https://e.example/ HTTP/1.0\nContent-Length: 0\n\n",
    ]

    static let responseSeeds: [String] = HTTPFuzzTests.responseSeeds + [
        "HTTP/1.1 404 Not Found at all\r\nContent-Type: text/plain; charset=utf-8\r\nVia:\t1.1 a \r\n\r\n",
    ]

    /// The default limits, and limits that end inside runs, on separators, or on line ends.
    static func limits(for iteration: Int, using generator: inout HTTPSeededGenerator) -> HeadLimits {
        guard iteration % 3 == 0 else { return HeadLimits() }
        return HeadLimits(
            maximumHeadBytes: Int.random(in: 0...90, using: &generator),
            maximumHeaderLines: Int.random(in: 0...4, using: &generator))
    }

    @Test("requests: with and without runs, in one piece and in random pieces")
    func requests() {
        var generator = HTTPSeededGenerator(seed: 0x5EED_0101)
        for iteration in 0..<6_000 {
            let seed = Self.requestSeeds[iteration % Self.requestSeeds.count]
            var input = HTTPTestSupport.bytes(seed)
            if iteration >= Self.requestSeeds.count { input = HTTPFuzzTests.mutate(input, using: &generator) }
            let limits = Self.limits(for: iteration, using: &generator)
            let pieces = HTTPFuzzTests.randomPieces(count: input.count, using: &generator)

            var byteByByte = RequestHeadParser(limits: limits, takesPlainRuns: false)
            let reference = HTTPTestSupport.parse(input, pieceSizes: []) { byteByByte.consume($0) }
            var whole = RequestHeadParser(limits: limits)
            let wholeResult = HTTPTestSupport.parse(input, pieceSizes: []) { whole.consume(Array($0)) }
            var split = RequestHeadParser(limits: limits)
            let splitResult = HTTPTestSupport.parse(input, pieceSizes: pieces) { split.consume($0) }

            #expect(wholeResult == reference, "one piece differs for \(HTTPTestSupport.text(input).debugDescription)")
            #expect(splitResult == reference, "pieces \(pieces) differ for \(HTTPTestSupport.text(input).debugDescription)")
        }
    }

    @Test("responses: with and without runs, in one piece and in random pieces")
    func responses() {
        var generator = HTTPSeededGenerator(seed: 0x5EED_0102)
        for iteration in 0..<3_000 {
            let seed = Self.responseSeeds[iteration % Self.responseSeeds.count]
            var input = HTTPTestSupport.bytes(seed)
            if iteration >= Self.responseSeeds.count { input = HTTPFuzzTests.mutate(input, using: &generator) }
            let limits = Self.limits(for: iteration, using: &generator)
            let pieces = HTTPFuzzTests.randomPieces(count: input.count, using: &generator)

            var byteByByte = ResponseHeadParser(limits: limits, takesPlainRuns: false)
            let reference = HTTPTestSupport.parse(input, pieceSizes: []) { byteByByte.consume($0) }
            var whole = ResponseHeadParser(limits: limits)
            let wholeResult = HTTPTestSupport.parse(input, pieceSizes: []) { whole.consume(Array($0)) }
            var split = ResponseHeadParser(limits: limits)
            let splitResult = HTTPTestSupport.parse(input, pieceSizes: pieces) { split.consume($0) }

            #expect(wholeResult == reference, "one piece differs for \(HTTPTestSupport.text(input).debugDescription)")
            #expect(splitResult == reference, "pieces \(pieces) differ for \(HTTPTestSupport.text(input).debugDescription)")
        }
    }

    @Test("a size limit inside a run fails at the byte over it, also when the run ends the input")
    func limitInsideRun() {
        let head = HTTPTestSupport.bytes("CONNECT example.com:443 HTTP/1.1\r\nUser-Agent: some client/1.0")
        for maximum in 0..<head.count {
            let limits = HeadLimits(maximumHeadBytes: maximum)
            var byteByByte = RequestHeadParser(limits: limits, takesPlainRuns: false)
            var runs = RequestHeadParser(limits: limits)
            let reference = byteByByte.consume(head)
            #expect(runs.consume(head) == reference, "limit \(maximum)")
            #expect(HTTPTestSupport.failure(reference)?.status == 431, "limit \(maximum)")
        }
    }
}
