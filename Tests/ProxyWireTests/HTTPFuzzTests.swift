import ProxyWire
import Testing

/// Mutates valid messages at random (seeded, so failures repeat) and checks that the parsers
/// never crash, always reach a verdict, and reach the same one however the input is split.
@Suite("Fuzzing with mutated messages")
struct HTTPFuzzTests {
    static let requestSeeds: [String] =
        HTTPRequestHeadTests.validCases.map(\.raw) + [
            "POST http://e.example/x HTTP/1.1\r\nHost: e.example\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\nConnection: close, X-A\r\n\r\n",
            "CONNECT [fe80::a:b%25lo]:8443 HTTP/1.1\r\nProxy-Authorization: Basic eA==\r\n\r\n",
        ]

    static let responseSeeds: [String] = [
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\nhello",
        "HTTP/1.0 302 Found\r\nLocation: http://e.example/\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 \r\nVia: 1.1 a\r\n\r\n",
    ]

    static let chunkedSeeds: [String] = HTTPChunkedBodyTests.validBodies

    /// Bytes that steer mutations towards the interesting parts of the grammar.
    static let interestingBytes: [UInt8] =
        Array(" \t\r\n:;,\"\\/[]%@?#=-.0123456789aAfFxX".utf8) + [0x00, 0x01, 0x7F, 0x80, 0xFF, 0x16]

    static func mutate(_ input: [UInt8], using generator: inout HTTPSeededGenerator) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...4, using: &generator) {
            let position = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &generator)
            let randomByte =
                Bool.random(using: &generator)
                ? UInt8.random(in: 0...255, using: &generator)
                : interestingBytes.randomElement(using: &generator) ?? 0
            switch Int.random(in: 0..<6, using: &generator) {
            case 0 where !bytes.isEmpty:
                bytes[position] = randomByte
            case 1:
                bytes.insert(randomByte, at: position)
            case 2 where !bytes.isEmpty:
                bytes.remove(at: position)
            case 3 where !bytes.isEmpty:
                let end = min(bytes.count, position + Int.random(in: 1...16, using: &generator))
                bytes.insert(contentsOf: Array(bytes[position..<end]), at: position)
            case 4:
                bytes = Array(bytes.prefix(max(1, position)))
            default:
                let end = min(bytes.count, position + Int.random(in: 1...8, using: &generator))
                bytes.removeSubrange(position..<end)
            }
        }
        return bytes
    }

    static func randomPieces(count: Int, using generator: inout HTTPSeededGenerator) -> [Int] {
        (0..<max(1, count)).map { _ in Int.random(in: 1...9, using: &generator) }
    }

    @Test("mutated requests end complete or failed with a 4xx/5xx, the same for any split")
    func requests() {
        var generator = HTTPSeededGenerator(seed: 0x5EED_0001)
        var outcomes = (complete: 0, failed: 0)
        for iteration in 0..<4_000 {
            let seed = Self.requestSeeds[iteration % Self.requestSeeds.count]
            // The appended empty lines make every input reach a verdict.
            let input = Self.mutate(HTTPTestSupport.bytes(seed), using: &generator) + HTTPTestSupport.bytes("\r\n\r\n")
            let oneShot = HTTPTestSupport.parseRequest(input)
            let split = HTTPTestSupport.parseRequest(
                input, pieceSizes: Self.randomPieces(count: input.count, using: &generator))
            #expect(split == oneShot, "split result differs for \(HTTPTestSupport.text(input).debugDescription)")
            switch oneShot {
            case .complete(var head, _):
                outcomes.complete += 1
                // Everything downstream of parsing must cope with whatever parsed.
                _ = try? head.bodyFraming()
                _ = head.isKeepAlive
                _ = head.headForOrigin(via: "fuzz")
                head.headers.add(name: "X", value: "y")
            case .failed(let error):
                outcomes.failed += 1
                #expect([400, 431, 501, 505].contains(error.status), "status \(error.status)")
                #expect(!error.reason.isEmpty)
            case .needMoreData:
                // Only empty lines can leave the parser waiting: they may precede a request.
                let onlyLineEnds = input.allSatisfy { $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\n") }
                #expect(onlyLineEnds, "no verdict for \(HTTPTestSupport.text(input).debugDescription)")
            }
        }
        // The mutations must exercise both outcomes, or the test proves little.
        #expect(outcomes.complete > 100)
        #expect(outcomes.failed > 100)
    }

    @Test("mutated responses end complete or failed with 502, and serialize to a parsable head")
    func responses() throws {
        var generator = HTTPSeededGenerator(seed: 0x5EED_0002)
        for iteration in 0..<2_000 {
            let seed = Self.responseSeeds[iteration % Self.responseSeeds.count]
            let input = Self.mutate(HTTPTestSupport.bytes(seed), using: &generator) + HTTPTestSupport.bytes("\r\n\r\n")
            let oneShot = HTTPTestSupport.parseResponse(input)
            let split = HTTPTestSupport.parseResponse(
                input, pieceSizes: Self.randomPieces(count: input.count, using: &generator))
            #expect(split == oneShot)
            switch oneShot {
            case .complete(let head, _):
                _ = try? head.bodyFraming(requestMethod: "GET")
                _ = head.connectionMustClose
                let serialized = head.serialized(addingVia: "fuzz")
                guard case .complete(let reparsed, let leftover) = HTTPTestSupport.parseResponse(serialized) else {
                    Issue.record("serialized head does not parse: \(HTTPTestSupport.text(serialized).debugDescription)")
                    continue
                }
                #expect(reparsed.status == head.status)
                #expect(leftover.isEmpty)
            case .failed(let error):
                #expect(error.status == 502)
            case .needMoreData:
                let onlyLineEnds = input.allSatisfy { $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\n") }
                #expect(onlyLineEnds, "no verdict for \(HTTPTestSupport.text(input).debugDescription)")
            }
        }
    }

    @Test("mutated chunked bodies scan the same in one piece and in random pieces")
    func chunkedBodies() {
        var generator = HTTPSeededGenerator(seed: 0x5EED_0003)
        for iteration in 0..<3_000 {
            let seed = Self.chunkedSeeds[iteration % Self.chunkedSeeds.count]
            let input = Self.mutate(HTTPTestSupport.bytes(seed), using: &generator)
            let oneShot = HTTPTestSupport.scanChunked(input, pieceSizes: [input.count])
            let split = HTTPTestSupport.scanChunked(
                input, pieceSizes: Self.randomPieces(count: input.count, using: &generator))
            #expect(split == oneShot, "split result differs for \(HTTPTestSupport.text(input).debugDescription)")
            switch oneShot {
            case .success(let scan):
                #expect(scan.consumed <= input.count)
                #expect(scan.finished || scan.consumed == input.count)
            case .failure(let error):
                #expect(error.status == 400)
            }
        }
    }
}
