import ProxyWire
import Testing

@Suite("Chunked body scanner")
struct HTTPChunkedBodyTests {
    static let validBodies: [String] = [
        "0\r\n\r\n",
        "000\r\n\r\n",
        "5\r\nhello\r\n0\r\n\r\n",
        "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
        "A\r\n0123456789\r\na\r\n0123456789\r\n0\r\n\r\n",
        "0005\r\nhe\r\nl\r\n0\r\n\r\n",
        "5;name=value\r\nhello\r\n0;last\r\n\r\n",
        "5 ; a = b ;c=\"q\\\"uoted; x\"\t;flag\r\nhello\r\n0\r\n\r\n",
        "0\r\nExpires: never\r\nX-Checksum:abc \r\n\r\n",
        "3\r\nabc\r\n0;x=1\r\nTrailer-A: 1\r\n\r\n",
    ]

    @Test("valid bodies end exactly at their last byte, in one piece", arguments: validBodies)
    func onePiece(_ body: String) throws {
        let input = HTTPTestSupport.bytes(body + "GET http://next/ HTTP/1.1\r\n\r\n")
        var scanner = ChunkedBodyScanner()
        let scan = try scanner.scan(input)
        #expect(scan.consumed == body.utf8.count && scan.finished)
        #expect(scanner.isFinished)
        #expect(try scanner.scan(input) == ChunkScan(consumed: 0, finished: true))
    }

    /// Bodies and their own bytes, the chunk data without sizes, extensions, CRLFs and trailers:
    /// what the request log counts.
    static let payloads: [(body: String, payload: Int)] = [
        ("0\r\n\r\n", 0),
        ("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", 11),
        ("0005\r\nhe\r\nl\r\n0\r\n\r\n", 5),
        ("5;name=value\r\nhello\r\n0;last\r\n\r\n", 5),
        ("3\r\nabc\r\n0;x=1\r\nTrailer-A: 1\r\n\r\n", 3),
    ]

    @Test("the payload counts chunk data only, in one piece or byte by byte", arguments: payloads)
    func payload(_ body: String, _ payload: Int) throws {
        var whole = ChunkedBodyScanner()
        #expect(try whole.scan(HTTPTestSupport.bytes(body)).payload == payload)
        var pieces = ChunkedBodyScanner()
        let total = try HTTPTestSupport.bytes(body).reduce(0) { sum, byte in try sum + pieces.scan([byte]).payload }
        #expect(total == payload)
    }

    @Test("valid bodies fed byte by byte finish at the last byte and not before", arguments: validBodies)
    func byteByByte(_ body: String) throws {
        let input = HTTPTestSupport.bytes(body + "NEXT")
        var scanner = ChunkedBodyScanner()
        var total = 0
        for (index, byte) in input.enumerated() {
            let scan = try scanner.scan([byte])
            total += scan.consumed
            let isLastBodyByte = index == body.utf8.count - 1
            if index < body.utf8.count {
                #expect(scan.consumed == 1)
                #expect(scan.finished == isLastBodyByte, "finished wrongly at byte \(index)")
            } else {
                #expect(scan == ChunkScan(consumed: 0, finished: true))
            }
        }
        #expect(total == body.utf8.count)
    }

    @Test("any split of a valid body gives the same total", arguments: validBodies)
    func anySplit(_ body: String) {
        let input = HTTPTestSupport.bytes(body)
        for split in 1..<max(2, input.count) {
            let result = HTTPTestSupport.scanChunked(input, pieceSizes: [split, 2, 1])
            #expect(result == .success(ChunkScan(consumed: input.count, finished: true)))
        }
    }

    @Test("a large chunk is skipped without looking at its bytes")
    func largeChunk() throws {
        var scanner = ChunkedBodyScanner()
        #expect(try scanner.scan(HTTPTestSupport.bytes("100000\r\n")) == ChunkScan(consumed: 8, finished: false))
        let data = [UInt8](repeating: 0x0D, count: 0x100000)
        #expect(try scanner.scan(data) == ChunkScan(consumed: data.count, finished: false, payload: data.count))
        #expect(try scanner.scan(HTTPTestSupport.bytes("\r\n0\r\n\r\nrest")) == ChunkScan(consumed: 7, finished: true))
    }

    @Test("the largest chunk size accepted is 2^62")
    func largestSize() throws {
        var scanner = ChunkedBodyScanner()
        #expect(
            try scanner.scan(HTTPTestSupport.bytes("4000000000000000\r\n")) == ChunkScan(consumed: 18, finished: false))
    }

    @Test(
        "malformed bodies are refused",
        arguments: [
            ("x\r\n", "not a hexadecimal number"),
            ("\r\n", "not a hexadecimal number"),
            ("-5\r\n", "not a hexadecimal number"),
            ("5\nhello\r\n0\r\n\r\n", "bare LF"),
            ("5\rhello", "CR that is not followed by LF"),
            ("5\r\nhelloX\r\n0\r\n\r\n", "not followed by CRLF"),
            ("5\r\nhello\n0\r\n\r\n", "not followed by CRLF"),
            ("5\r\nhello\r0\r\n\r\n", "not followed by CRLF"),
            ("00000000000000001\r\n", "more than 16 digits"),
            ("4000000000000001\r\n", "larger than 2^62"),
            ("FFFFFFFFFFFFFFFF\r\n", "larger than 2^62"),
            ("10000000000000000\r\n", "more than 16 digits"),
            ("5 \r\nhello\r\n", "followed by whitespace"),
            ("5x\r\n", "invalid byte 'x'"),
            ("5;\r\nhello\r\n", "chunk extension"),
            ("5;a b\r\nhello\r\n", "chunk extension"),
            ("5;a=\r\nhello\r\n", "chunk extension"),
            ("5;a=\"open\r\nhello\r\n", "chunk extension"),
            ("5;a=b\nhello\r\n", "chunk extension"),
            ("5;a=\"x\"y\r\nhello\r\n", "chunk extension"),
            ("5;a=b\u{01}\r\nhello\r\n", "chunk extension"),
            ("0\r\nA: b\r\n c\r\n\r\n", "obsolete line folding"),
            ("0\r\nNoColon\r\n\r\n", "trailer field name"),
            ("0\r\nA : b\r\n\r\n", "trailer field name"),
            ("0\r\nA: b\nC: d\r\n\r\n", "control byte 0x0A"),
            ("0\r\n\n", "unexpected byte 0x0A"),
            ("0\r\n\rX", "CR that is not followed by LF"),
            ("0\r\n:x\r\n\r\n", "unexpected byte ':'"),
        ])
    func rejectsMalformed(_ body: String, _ phrase: String) {
        let input = HTTPTestSupport.bytes(body)
        for sizes in [[input.count], Array(repeating: 1, count: input.count)] {
            guard case .failure(let error) = HTTPTestSupport.scanChunked(input, pieceSizes: sizes) else {
                Issue.record("accepted \(body.debugDescription)")
                return
            }
            #expect(error.status == 400)
            #expect(error.reason.contains(phrase), "reason was: \(error.reason)")
        }
    }

    /// How the proxy scans a request body: the HTTP Garden's server bug 39 (a loose origin ends the
    /// body at "0\r\nXX" and reads the trailer line as a request) and its plainer forms.
    @Test(
        "refusing trailer fields: an empty trailer section ends the body, any field is a 400",
        arguments: [
            ("0\r\n\r\n", true),
            ("5\r\nhello\r\n0;x=1\r\n\r\n", true),
            ("0\r\nX-Trailer: yes\r\n\r\n", false),
            ("0\r\nX:GET /smuggled HTTP/1.1\r\n\r\n", false),
            ("0\r\nContent-Length: 5\r\n\r\n", false),
            ("0\r\n:x\r\n\r\n", false),
        ])
    func refusesTrailerFields(_ body: String, _ accepted: Bool) {
        let input = HTTPTestSupport.bytes(body)
        for sizes in [[input.count], Array(repeating: 1, count: input.count)] {
            switch HTTPTestSupport.scanChunked(input, pieceSizes: sizes, refusesTrailerFields: true) {
            case .success(let scan):
                #expect(accepted && scan.consumed == input.count && scan.finished)
            case .failure(let error):
                #expect(!accepted && error.status == 400, "\(error.reason)")
                #expect(error.reason.contains("trailer fields"))
            }
        }
    }

    @Test(
        "chunk-size and trailer lines are limited to 4096 bytes",
        arguments: [
            "1;" + String(repeating: "a", count: 4_100) + "\r\n",
            "1;a=\"" + String(repeating: "q", count: 4_100) + "\"\r\n",
            "0\r\nX-Long: " + String(repeating: "v", count: 4_100) + "\r\n\r\n",
        ])
    func lineLimit(_ body: String) {
        guard case .failure(let error) = HTTPTestSupport.scanChunked(HTTPTestSupport.bytes(body), pieceSizes: [100])
        else {
            Issue.record("an overlong line was accepted")
            return
        }
        #expect(error.reason.contains("longer than 4096 bytes"))
    }

    @Test("lines just under the limit are accepted")
    func lineJustUnderLimit() {
        let name = String(repeating: "a", count: 4_096 - 3)  // "1;" + name + CR = 4096
        let body = "1;\(name)\r\nx\r\n0\r\n\r\n"
        #expect(
            HTTPTestSupport.scanChunked(HTTPTestSupport.bytes(body), pieceSizes: [7])
                == .success(ChunkScan(consumed: body.utf8.count, finished: true)))
    }

    @Test("an error is repeated on the next call, and response bodies get 502")
    func stickyErrorAndResponseStatus() {
        var scanner = ChunkedBodyScanner(kind: .response)
        #expect(throws: HeadError.self) { try scanner.scan(HTTPTestSupport.bytes("z")) }
        do {
            _ = try scanner.scan(HTTPTestSupport.bytes("0\r\n\r\n"))
            Issue.record("a failed scanner accepted more bytes")
        } catch {
            #expect(error.status == 502)
        }
    }
}
