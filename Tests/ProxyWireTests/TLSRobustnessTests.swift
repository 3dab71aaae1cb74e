import ProxyWire
import TLSTestSupport
import Testing

/// No input may crash the scanner, grow it without bound or leave it undecided once a whole
/// message is in.
@Suite("TLS scanner robustness")
struct TLSRobustnessTests {
    /// Every scanner answer is one of these; the switch fails to compile if a case is added
    /// without this check being revisited.
    static func isWellFormed(_ state: TLSScanState) -> Bool {
        switch state {
        case .needMoreData: true
        case .notTLS(let reason), .failed(let reason): !reason.isEmpty
        case .clientHello, .serverHello: true
        }
    }

    @Test(
        "truncation at every length waits, then decides the same as the whole capture", arguments: TLSCaptures.allNames)
    func truncation(_ name: String) throws {
        let capture = try TLSCaptures.bytes(name)
        let direction = TLSCaptures.direction(of: name)
        let whole = Scan.whole(capture, direction)
        var decidedAt: Int?
        for length in 0...capture.count {
            var scanner = TLSHelloScanner(direction: direction)
            let state = scanner.feed(capture.prefix(length))
            if state == .needMoreData {
                #expect(decidedAt == nil, "undecided at \(length) after deciding at \(decidedAt ?? -1)")
                // The stream ending here is reported, never left open.
                let ended = scanner.finish()
                #expect(ended.failureReason != nil || (length == 0 && ended.notTLSReason != nil))
            } else {
                #expect(state == whole, "prefix of \(length) bytes")
                decidedAt = decidedAt ?? length
            }
        }
        #expect(decidedAt != nil)
    }

    @Test(
        "a hello body cut at every length, with its lengths made consistent, fails or parses",
        arguments: TLSCaptures.allNames.filter { !$0.hasPrefix("alert") || $0.hasSuffix("client") })
    func truncatedBodies(_ name: String) throws {
        let message = try TLSCaptures.firstHandshakeMessage(name)
        let direction = TLSCaptures.direction(of: name)
        // legacy_version, random, legacy_session_id_echo, cipher_suite, legacy_compression_method.
        let extensionlessServerHelloLength = 2 + 32 + 1 + Int(message[4 + 34]) + 2 + 1
        for length in 0..<(message.count - 4) {
            let body = Array(message[4..<(4 + length)])
            let state = Scan.whole(Wire.record(Wire.handshake(type: message[0], body)), direction)
            #expect(Self.isWellFormed(state))
            // A complete message is always decided (a hello cut right after its compression
            // methods is a valid extension-less TLS 1.2 hello) except a HelloRetryRequest cut
            // there, which is still a HelloRetryRequest: the scanner rightly waits for the
            // ServerHello after it.
            let isStillHelloRetryRequest = name == "tls13-hrr-server" && length == extensionlessServerHelloLength
            #expect((state == .needMoreData) == isStillHelloRetryRequest, "body cut to \(length)")
        }
    }

    @Test("seeded fuzzing: thousands of mutated captures never crash and decide the same in any chunking")
    func fuzz() throws {
        var generator = SplitMix64(seed: 0xF022_2026)
        var counts: [String: Int] = [:]
        for name in TLSCaptures.allNames {
            let capture = try TLSCaptures.bytes(name)
            let direction = TLSCaptures.direction(of: name)
            for _ in 0..<400 {
                let mutated = Self.mutate(capture, using: &generator)
                let whole = Scan.whole(mutated, direction)
                #expect(Self.isWellFormed(whole))
                let sizes = Scan.randomSizes(covering: mutated.count, maximum: 40, using: &generator)
                let chunked = Scan.chunked(mutated, direction, sizes: sizes)
                #expect(chunked == whole, "\(name) mutated to \(mutated)")
                var scanner = TLSHelloScanner(direction: direction)
                _ = scanner.feed(mutated)
                #expect(scanner.finish() != .needMoreData)
                counts[Self.kind(whole), default: 0] += 1
            }
        }
        // The mutations reach every outcome, so the loop exercises the parsers, not just the
        // first byte.
        for kind in ["notTLS", "failed", "clientHello", "serverHello", "needMoreData"] {
            #expect(counts[kind, default: 0] > 0, "no mutation ended in \(kind): \(counts)")
        }
    }

    @Test("seeded random bytes behind a valid handshake record header")
    func randomRecords() {
        var generator = SplitMix64(seed: 7)
        for round in 0..<3000 {
            let length = Int.random(in: 0...300, using: &generator)
            let body = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let type: UInt8 = round % 2 == 0 ? 1 : 2
            // Half the time give the handshake header a plausible length, so the parsers run.
            var message = [type] + Wire.lengthPrefix(length, 3) + body
            if round % 4 >= 2 {
                message = [type] + Wire.lengthPrefix(Int.random(in: 0...0xFFFFFF, using: &generator), 3) + body
            }
            let direction: TLSHelloScanner.Direction = type == 1 ? .clientToServer : .serverToClient
            let state = Scan.whole(Wire.record(message), direction)
            #expect(Self.isWellFormed(state))
        }
    }

    static func kind(_ state: TLSScanState) -> String {
        switch state {
        case .needMoreData: "needMoreData"
        case .notTLS: "notTLS"
        case .failed: "failed"
        case .clientHello: "clientHello"
        case .serverHello: "serverHello"
        }
    }

    /// One to four random edits, mostly inside the first record, where the hello is.
    static func mutate(_ input: [UInt8], using generator: inout SplitMix64) -> [UInt8] {
        var bytes = input
        let firstRecordEnd = min(bytes.count, 5 + (Int(bytes[3]) << 8 | Int(bytes[4])))
        for _ in 0..<Int.random(in: 1...4, using: &generator) {
            guard !bytes.isEmpty else { break }
            let upper = Bool.random(using: &generator) ? bytes.count : min(bytes.count, firstRecordEnd)
            let position = Int.random(in: 0..<max(1, upper), using: &generator)
            switch Int.random(in: 0..<7, using: &generator) {
            case 0: bytes[position] ^= UInt8(1) << UInt8.random(in: 0...7, using: &generator)
            case 1: bytes[position] = [0x00, 0xFF, 0x01, 0x80][Int.random(in: 0..<4, using: &generator)]
            case 2: bytes[position] = UInt8.random(in: 0...255, using: &generator)
            case 3:
                let count = Int.random(in: 1...8, using: &generator)
                bytes.insert(
                    contentsOf: (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }, at: position)
            case 4:
                bytes.removeSubrange(position..<min(bytes.count, position + Int.random(in: 1...8, using: &generator)))
            case 5: bytes.removeSubrange(position...)
            default:
                // A 16-bit length-like field set to an extreme.
                if position + 1 < bytes.count {
                    let value: UInt16 = [0x0000, 0xFFFF, 0x4001, 0x0001][Int.random(in: 0..<4, using: &generator)]
                    bytes[position] = UInt8(value >> 8)
                    bytes[position + 1] = UInt8(value & 0xFF)
                }
            }
        }
        return bytes
    }
}
