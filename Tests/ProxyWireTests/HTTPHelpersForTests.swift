import ProxyWire
import TLSTestSupport

/// Shared helpers for the HTTP tests, in a namespace so they cannot clash with other suites
/// of the same test module.
enum HTTPTestSupport {
    static func bytes(_ text: String) -> [UInt8] {
        Array(text.utf8)
    }

    static func text(_ bytes: [UInt8]) -> String {
        String(decoding: bytes, as: UTF8.self)
    }

    /// Feeds `input` to a fresh parser in pieces of the given sizes (the last piece takes the
    /// rest) and returns the first result that is not `.needMoreData`. On completion, the bytes
    /// never fed are appended to the leftover, so the result is comparable with a one-shot parse.
    static func parse<Head>(
        _ input: [UInt8],
        pieceSizes: [Int],
        consume: (ArraySlice<UInt8>) -> HeadParseResult<Head>
    ) -> HeadParseResult<Head> {
        var start = 0
        var sizes = pieceSizes[...]
        while start < input.count {
            let size = max(1, sizes.popFirst() ?? input.count)
            let end = min(input.count, start + size)
            let result = consume(input[start..<end])
            start = end
            switch result {
            case .needMoreData:
                continue
            case .complete(let head, let leftover):
                return .complete(head, leftover: leftover + input[start...])
            case .failed:
                return result
            }
        }
        return .needMoreData
    }

    static func parseRequest(_ input: [UInt8], limits: HeadLimits = HeadLimits(), pieceSizes: [Int] = [])
        -> HeadParseResult<RequestHead>
    {
        var parser = RequestHeadParser(limits: limits)
        return parse(input, pieceSizes: pieceSizes) { parser.consume($0) }
    }

    static func parseRequest(_ input: String, limits: HeadLimits = HeadLimits()) -> HeadParseResult<RequestHead> {
        parseRequest(bytes(input), limits: limits)
    }

    static func parseRequestByteByByte(_ input: [UInt8], limits: HeadLimits = HeadLimits()) -> HeadParseResult<
        RequestHead
    > {
        parseRequest(input, limits: limits, pieceSizes: Array(repeating: 1, count: input.count))
    }

    static func parseResponse(_ input: [UInt8], pieceSizes: [Int] = []) -> HeadParseResult<ResponseHead> {
        var parser = ResponseHeadParser()
        return parse(input, pieceSizes: pieceSizes) { parser.consume($0) }
    }

    static func parseResponse(_ input: String) -> HeadParseResult<ResponseHead> {
        parseResponse(bytes(input))
    }

    static func requestHead(_ input: String) throws -> RequestHead {
        guard case .complete(let head, _) = parseRequest(input) else {
            throw HTTPTestFailure("not a complete request: \(parseRequest(input))")
        }
        return head
    }

    static func responseHead(_ input: String) throws -> ResponseHead {
        guard case .complete(let head, _) = parseResponse(input) else {
            throw HTTPTestFailure("not a complete response: \(parseResponse(input))")
        }
        return head
    }

    static func failure<Head>(_ result: HeadParseResult<Head>) -> HeadError? {
        if case .failed(let error) = result { return error }
        return nil
    }

    static func pairs(_ headers: HTTPHeaders) -> [String] {
        headers.map { "\($0.name): \($0.value)" }
    }

    /// Scans `input` with a fresh scanner in pieces of the given sizes; returns the total bytes
    /// consumed and whether the body finished, or the error.
    static func scanChunked(
        _ input: [UInt8], pieceSizes: [Int], kind: HTTPMessageKind = .request, refusesTrailerFields: Bool = false
    ) -> Result<ChunkScan, HeadError> {
        var scanner = ChunkedBodyScanner(kind: kind, refusesTrailerFields: refusesTrailerFields)
        var start = 0
        var consumed = 0
        var sizes = pieceSizes[...]
        while start < input.count {
            let size = max(1, sizes.popFirst() ?? input.count)
            let end = min(input.count, start + size)
            do {
                let scan = try scanner.scan(input[start..<end])
                consumed += scan.consumed
                if scan.finished { return .success(ChunkScan(consumed: consumed, finished: true)) }
                guard scan.consumed == end - start else {
                    return .failure(HeadError(status: 0, reason: "consumed less than given without finishing"))
                }
            } catch {
                return .failure(error)
            }
            start = end
        }
        return .success(ChunkScan(consumed: consumed, finished: false))
    }
}

struct HTTPTestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A small, seedable generator (SplitMix64), so the fuzz tests repeat exactly.
struct HTTPSeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
