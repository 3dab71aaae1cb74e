import TLSTestSupport
import Testing
import TextFormats

/// Random values that reach the writer's and the parser's corners: escapes, controls, U+2028,
/// astral characters, Int64's ends, doubles across the whole exponent range, empty and
/// duplicate-keyed containers.
private enum RandomJSON {
    static func value(_ random: inout SplitMix64, depth: Int = 0) -> JSONValue {
        let kinds = depth >= 5 ? 5 : 7
        switch Int.random(in: 0..<kinds, using: &random) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &random))
        case 2: return .int(integer(&random))
        case 3: return .double(double(&random))
        case 4: return .string(string(&random))
        case 5:
            return .array((0..<Int.random(in: 0...5, using: &random)).map { _ in value(&random, depth: depth + 1) })
        default:
            let keys = ["a", "b", string(&random)]
            return .object(
                (0..<Int.random(in: 0...5, using: &random)).map { _ in
                    (keys.randomElement(using: &random)!, value(&random, depth: depth + 1))
                })
        }
    }

    static func integer(_ random: inout SplitMix64) -> Int64 {
        switch Int.random(in: 0..<4, using: &random) {
        case 0: [Int64.min, Int64.max, 0, -1, 1, Int64.min + 1].randomElement(using: &random)!
        case 1: Int64.random(in: -1000...1000, using: &random)
        default: Int64(bitPattern: random.next())
        }
    }

    static func double(_ random: inout SplitMix64) -> Double {
        switch Int.random(in: 0..<4, using: &random) {
        case 0:
            return [
                0.0, -0.0, 1.0, -1.5, 0.1, 1e300, -1e-300, .leastNonzeroMagnitude, .greatestFiniteMagnitude,
                .leastNormalMagnitude, 9_007_199_254_740_993.0,
            ].randomElement(using: &random)!
        case 1:
            return Double(Int.random(in: -100_000...100_000, using: &random)) / 100
        default:
            // Any finite bit pattern: every exponent, subnormals included.
            while true {
                let value = Double(bitPattern: random.next())
                if value.isFinite { return value }
            }
        }
    }

    static func string(_ random: inout SplitMix64) -> String {
        let pieces: [ClosedRange<UInt32>] = [
            0x20...0x7E, 0x20...0x7E, 0x0...0x1F, 0x22...0x22, 0x5C...0x5C, 0x7F...0x7F,
            0x80...0x7FF, 0x800...0xD7FF, 0xE000...0xFFFF, 0x2028...0x2029, 0x10000...0x10FFFF,
        ]
        var scalars = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0...12, using: &random) {
            let range = pieces.randomElement(using: &random)!
            scalars.append(Unicode.Scalar(UInt32.random(in: range, using: &random))!)
        }
        return String(scalars)
    }
}

@Suite("JSON round trips")
struct JSONRoundTripTests {
    @Test(
        "parse(serialized(x)) == x, compact and pretty",
        arguments: [
            JSONValue.null, true, false, 0, -1, .int(Int64.max), .int(Int64.min), .double(1.5), .double(-0.25),
            .double(1e300), .double(Double(bitPattern: 0x8000_0000_1234_5678)), .double(123_456.789), .double(3),
            .double(0.1),
            "", "plain", "quote \" backslash \\ slash /", "controls \u{0}\u{1}\u{8}\u{C}\n\r\t\u{1F}\u{7F}",
            "é ü 日本 🙂 \u{10FFFF}", "line\u{2028}para\u{2029}", "\u{FEFF}bom inside",
            .array([]), .object([]), .array([.array([.array([])])]), .object([("", .object([("", .null)]))]),
            .object([("z", 1), ("a", 2), ("z", 3)]),
            .object([
                ("host", "example.com"), ("port", 443), ("ratio", .double(0.5)),
                ("tags", .array(["a", "b", .null, true])), ("nested", .object([("deep", .array([.object([])]))])),
                ("ключ", "значение"), ("🙂", -42),
            ]),
        ] as [JSONValue])
    func roundTrip(_ value: JSONValue) throws {
        #expect(try JSONValue(parsing: value.serializedBytes) == value)
        #expect(try JSONValue(parsing: value.serialized) == value)
        #expect(try JSONValue(parsing: value.prettyPrinted) == value)
    }

    @Test("random values survive serialising and parsing back, byte for byte")
    func randomRoundTrips() throws {
        var random = SplitMix64(state: 0x4A53_4F4E)
        for index in 0..<2_000 {
            let value = RandomJSON.value(&random)
            let bytes = value.serializedBytes
            let parsed = try JSONValue(parsing: bytes)
            #expect(parsed == value, "value \(index): \(value.serialized)")
            #expect(parsed.serializedBytes == bytes, "value \(index)")
            #expect(try JSONValue(parsing: value.prettyPrinted) == value, "value \(index), pretty")
        }
    }

    @Test("damaged serialisations never crash, and errors point inside the input")
    func damagedInput() {
        var random = SplitMix64(state: 0xDA4A_6ED)
        for _ in 0..<2_000 {
            var bytes = RandomJSON.value(&random).serializedBytes
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let index = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0: bytes[index] = UInt8.random(in: 0...255, using: &random)
                case 1: bytes.remove(at: index)
                default: bytes.insert(Array("[]{},:\"\\-0e.".utf8).randomElement(using: &random)!, at: index)
                }
                if bytes.isEmpty { break }
            }
            guard let error = jsonParseError(bytes) else { continue }
            #expect(error.offset >= 0 && error.offset <= bytes.count)
            #expect(error.line >= 1 && error.column >= 1)
        }
    }
}
