import TLSTestSupport
import Testing

@testable import TextFormats

/// The log line is written by `JSONObjectWriter` and read back as the value `JSONObjectBuilder`
/// collects: the two must give the same bytes for every member kind.
@Suite("JSON object sinks: writer bytes equal the built value's")
struct JSONObjectSinkTests {
    private static let strings = [
        "", "plain", "quote \" and \\ backslash", "tab\tnew\nline\rcarriage", "\u{0}\u{1f}\u{7f}",
        "line\u{2028}sep\u{2029}",
        "é ü 日本 🙂", "TLS_AES_128_GCM_SHA256",
    ]
    private static let integers: [Int64] = [0, 1, 9, 10, 99, 100, -1, -10, 443, 65_535, 1_732_000_000_123, .max, .min]

    /// Adds one member, chosen by `choice`, to both sinks.
    private static func addMember(
        _ choice: UInt64, _ random: inout SplitMix64, to builder: inout JSONObjectBuilder,
        and writer: inout JSONObjectWriter
    ) {
        func pickString() -> String { strings[Int(random.next() % UInt64(strings.count))] }
        func pickInteger() -> Int64 { integers[Int(random.next() % UInt64(integers.count))] }
        switch choice % 10 {
        case 0:
            let value = pickString()
            builder.add("string", string: value)
            writer.add("string", string: value)
        case 1:
            builder.add("nothing", string: nil)
            writer.add("nothing", string: nil)
        case 2:
            let value = pickInteger()
            builder.add("int", int: value)
            writer.add("int", int: value)
        case 3:
            let value = random.next() % 2 == 0
            builder.add("bool", bool: value)
            writer.add("bool", bool: value)
        case 4:
            let values = (0..<Int(random.next() % 4)).map { _ in pickString() }
            builder.add("strings", strings: values)
            writer.add("strings", strings: values)
        case 5:
            let value: JSONValue = .object([
                ("kind", .string(pickString())), ("n", .int(pickInteger())), ("list", .array([.null, .bool(true)])),
            ])
            builder.add("object", value)
            writer.add("object", value)
        case 6:
            builder.add("null", nil)
            writer.add("null", nil)
        case 8:
            let value = Pair(name: pickString(), number: random.next() % 2 == 0 ? pickInteger() : nil)
            builder.add("nested", object: value)
            writer.add("nested", object: value)
        case 9:
            builder.add("absent", object: Pair?.none)
            writer.add("absent", object: Pair?.none)
        default:
            let value: JSONValue = .array([.string(pickString()), .int(pickInteger())])
            builder.add("serialized", value: value, serializedAs: value.serializedBytes)
            writer.add("serialized", value: value, serializedAs: value.serializedBytes)
        }
    }

    /// A nested object with a string, an optional number, and an empty object inside.
    private struct Pair: JSONObjectWritable {
        let name: String
        let number: Int64?

        func writeMembers(to sink: inout some JSONObjectSink) {
            sink.add("name", string: name)
            sink.add("number", number.map { JSONValue.int($0) })
            sink.add("empty", object: Empty())
        }
    }

    private struct Empty: JSONObjectWritable {
        func writeMembers(to sink: inout some JSONObjectSink) {}
    }

    @Test("an empty object")
    func empty() {
        #expect(JSONObjectWriter().finish() == Array("{}".utf8))
        #expect(JSONObjectBuilder().value.serializedBytes == Array("{}".utf8))
    }

    @Test("integers are written as decimal digits", arguments: integers)
    func integer(_ value: Int64) {
        var writer = JSONObjectWriter()
        writer.add("n", int: value)
        #expect(writer.finish() == Array("{\"n\":\(value)}".utf8))
    }

    @Test("300 seeded objects of every member kind")
    func seededObjects() {
        var random = SplitMix64(seed: 0x4a53_4f4e)
        for _ in 0..<300 {
            var builder = JSONObjectBuilder()
            var writer = JSONObjectWriter(reservingCapacity: 16)
            for _ in 0..<Int(random.next() % 12) {
                let choice = random.next()
                Self.addMember(choice, &random, to: &builder, and: &writer)
            }
            let built = builder.value.serializedBytes
            let written = writer.finish()
            #expect(
                written == built,
                "\(String(decoding: written, as: UTF8.self)) vs \(String(decoding: built, as: UTF8.self))")
        }
    }
}
