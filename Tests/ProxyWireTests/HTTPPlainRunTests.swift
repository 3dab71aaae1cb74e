import Testing

@testable import ProxyWire

/// The head scanner takes runs of plain bytes (a method, a target, field names and values) in
/// one step. Taking every byte on its own is the reference: both must reach the same result,
/// reasons included, wherever the input is cut and wherever the size limit falls.
@Suite("Runs of plain bytes parse as byte-by-byte scanning does")
struct HTTPPlainRunTests {
    static let requestSeeds: [String] =
        HTTPFuzzTests.requestSeeds + [
            "CONNECT localhost:46783 HTTP/1.1\r\nHost: localhost:46783\r\nUser-Agent: a b\tc \t \r\nX-Empty:\r\nX-Obs: caf\u{E9}\r\n\r\nbody",
            "GET http://example.com/a/very/long/path?with=a&query=string HTTP/1.1\r\nAccept:   */*   \r\n\n",
            "\r\n\nPOST https://e.example/ HTTP/1.0\nContent-Length: 0\n\n",
        ]

    static let responseSeeds: [String] =
        HTTPFuzzTests.responseSeeds + [
            "HTTP/1.1 404 Not Found at all\r\nContent-Type: text/plain; charset=utf-8\r\nVia:\t1.1 a \r\n\r\n"
        ]

    /// The default limits, and limits that end inside runs, on separators, or on line ends.
    static func limits(for iteration: Int, using generator: inout HTTPSeededGenerator) -> HeadLimits {
        guard iteration % 3 == 0 else { return HeadLimits() }
        return HeadLimits(
            maximumHeadBytes: Int.random(in: 0...90, using: &generator),
            maximumHeaderLines: Int.random(in: 0...4, using: &generator))
    }

    /// Parses each input three ways: byte by byte (no runs; the reference), whole with runs, and in
    /// random pieces with runs; the three results must agree. `parser(limits, takesPlainRuns)` makes
    /// a parser and returns its two consume overloads (the whole input goes in as an array).
    private static func compareRuns<Head: Equatable>(
        seeds: [String], iterations: Int, seed: UInt64,
        parser: (HeadLimits, Bool) -> (
            slice: (ArraySlice<UInt8>) -> HeadParseResult<Head>, array: ([UInt8]) -> HeadParseResult<Head>
        )
    ) {
        var generator = HTTPSeededGenerator(seed: seed)
        for iteration in 0..<iterations {
            var input = HTTPTestSupport.bytes(seeds[iteration % seeds.count])
            if iteration >= seeds.count { input = HTTPFuzzTests.mutate(input, using: &generator) }
            let limits = limits(for: iteration, using: &generator)
            let pieces = HTTPFuzzTests.randomPieces(count: input.count, using: &generator)

            let reference = HTTPTestSupport.parse(input, pieceSizes: [], consume: parser(limits, false).slice)
            let whole = parser(limits, true).array
            let wholeResult = HTTPTestSupport.parse(input, pieceSizes: []) { whole(Array($0)) }
            let splitResult = HTTPTestSupport.parse(input, pieceSizes: pieces, consume: parser(limits, true).slice)

            #expect(wholeResult == reference, "one piece differs for \(HTTPTestSupport.text(input).debugDescription)")
            #expect(
                splitResult == reference, "pieces \(pieces) differ for \(HTTPTestSupport.text(input).debugDescription)")
        }
    }

    @Test("requests: with and without runs, in one piece and in random pieces")
    func requests() {
        Self.compareRuns(seeds: Self.requestSeeds, iterations: 6_000, seed: 0x5EED_0101) { limits, runs in
            var parser = RequestHeadParser(limits: limits, takesPlainRuns: runs)
            return ({ parser.consume($0) }, { parser.consume($0) })
        }
    }

    @Test("responses: with and without runs, in one piece and in random pieces")
    func responses() {
        Self.compareRuns(seeds: Self.responseSeeds, iterations: 3_000, seed: 0x5EED_0102) { limits, runs in
            var parser = ResponseHeadParser(limits: limits, takesPlainRuns: runs)
            return ({ parser.consume($0) }, { parser.consume($0) })
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
