import ATSPolicy
import Foundation
import TLSTestSupport
import Testing

/// Our property-list parser (pure Swift, XML and binary) against Foundation's
/// `PropertyListSerialization` on the same bytes: the fixtures (which are also fuzz-plist's seed
/// corpus) and a few hundred deterministic mutations of them. Both must give the same values, or
/// both refuse, except for the differences named in ``PropertyListOracleTests/Difference``.
@Suite("property lists: our parser against Foundation's")
struct PropertyListOracleTests {
    /// fuzz-plist's seed directories (Makefile's FUZZ_TARGETS), all fixtures of this target.
    static let seedDirectories = [
        "Tests/ATSPolicyTests/Fixtures/plist", "Tests/ATSPolicyTests/Fixtures/policies",
        "Tests/ATSPolicyTests/Fixtures/mistakes",
    ]
    static let seeds = seedDirectories.flatMap(OracleInputs.files(in:))

    /// A value both parsers' results are converted into. Dictionaries hold the last value of a
    /// repeated key, as our `lookup` and Foundation's XML parser keep it.
    indirect enum Tree: Equatable, CustomStringConvertible {
        case dictionary([String: Tree])
        case array([Tree])
        case string(String)
        case integer(Int64)
        case unsigned(UInt64)
        case real(Double)
        case boolean(Bool)
        case date(Double)
        case data([UInt8])
        case other(String)

        static func == (a: Tree, b: Tree) -> Bool {
            switch (a, b) {
            case (.dictionary(let x), .dictionary(let y)): x == y
            case (.array(let x), .array(let y)): x == y
            case (.string(let x), .string(let y)): x == y
            case (.integer(let x), .integer(let y)): x == y
            case (.unsigned(let x), .unsigned(let y)): x == y
            case (.real(let x), .real(let y)): x == y || (x.isNaN && y.isNaN)
            case (.boolean(let x), .boolean(let y)): x == y
            // Foundation's dates go through its reference date (2001) in Doubles: a rounding apart.
            case (.date(let x), .date(let y)): abs(x - y) <= 1e-6 * max(1, abs(x))
            case (.data(let x), .data(let y)): x == y
            case (.other(let x), .other(let y)): x == y
            default: false
            }
        }

        /// Whether this value or one inside it satisfies `test`.
        func contains(_ test: (Tree) -> Bool) -> Bool {
            if test(self) { return true }
            switch self {
            case .dictionary(let x): return x.values.contains { $0.contains(test) }
            case .array(let x): return x.contains { $0.contains(test) }
            default: return false
            }
        }

        var description: String {
            switch self {
            case .dictionary(let x):
                "{"
                    + x.sorted { $0.key < $1.key }.map { "\($0.key.debugDescription): \($0.value)" }.joined(
                        separator: ", ") + "}"
            case .array(let x): "[" + x.map(\.description).joined(separator: ", ") + "]"
            case .string(let x): x.debugDescription
            case .integer(let x): "\(x)"
            case .unsigned(let x): "\(x)u"
            case .real(let x): "\(x)r"
            case .boolean(let x): "\(x)"
            case .date(let x): "date(\(x))"
            case .data(let x): "data(\(x.count))"
            case .other(let x): x
            }
        }
    }

    /// - Parameter firstWins: keep the first of a repeated key instead of the last.
    static func tree(_ node: PropertyListNode, firstWins: Bool = false) -> Tree {
        switch node.value {
        case .bool(let x): .boolean(x)
        case .integer(let x): .integer(x)
        case .unsignedInteger(let x): .unsigned(x)
        case .real(let x): .real(x)
        case .string(let x): .string(x)
        case .data(let x): .data(x)
        case .date(let x): .date(x)
        case .array(let x): .array(x.map { tree($0, firstWins: firstWins) })
        case .dictionary(let entries):
            .dictionary(
                Dictionary(
                    entries.map { ($0.key, tree($0.value, firstWins: firstWins)) },
                    uniquingKeysWith: { first, last in firstWins ? first : last }))
        case .uid(let x): .other("uid(\(x))")
        }
    }

    static func tree(_ value: Any) -> Tree {
        switch value {
        case let x as [String: Any]: .dictionary(x.mapValues(tree))
        case let x as [Any]: .array(x.map(tree))
        case let x as String: .string(x)
        case let x as Date: .date(x.timeIntervalSince1970)
        case let x as Data: .data(Array(x))
        case let x where type(of: x) == Bool.self: .boolean(x as! Bool)
        case let x as NSNumber where x.isBoolean: .boolean(x.boolValue)
        case let x as NSNumber where x.isReal: .real(x.doubleValue)
        case let x as NSNumber where String(cString: x.objCType) == "Q": .unsigned(x.uint64Value)
        case let x as NSNumber: .integer(x.int64Value)
        default: .other("\(type(of: value))")
        }
    }

    static func ours(_ bytes: [UInt8]) -> Result<PropertyListNode, PropertyListError> {
        Result { () throws(PropertyListError) in try PropertyListParser.parse(bytes).root }
    }

    static func foundation(_ bytes: [UInt8]) -> Result<Any, any Error> {
        Result { try PropertyListSerialization.propertyList(from: Data(bytes), options: [], format: nil) }
    }

    /// What each side made of `bytes`: a tree, or nil for a refusal.
    static func outcomes(_ bytes: [UInt8]) -> (ours: Tree?, foundation: Tree?) {
        ((try? ours(bytes).get()).map { tree($0) }, (try? foundation(bytes).get()).map(tree))
    }

    /// A way the two legitimately differ, each with the reason; an input that differs in none of
    /// these ways is a failure.
    enum Difference: String, CaseIterable {
        /// A binary plist that repeats a key: Foundation on Linux keeps the first value, we keep
        /// the last, as Foundation's XML parser does and as our `lookup` documents (and
        /// `atsproxyctl check` reports the repeat). A binary plist written from a dictionary cannot
        /// repeat a key; the XML twins of the same fixtures agree. (Which one iOS keeps is not
        /// settled here: worth checking on a device.)
        case binaryRepeatedKeyKeepsFirst
        /// A binary ASCII string object with a byte above 0x7F: Foundation reads it as Latin-1, we
        /// refuse it (the format says ASCII; writers store other text as UTF-16 objects).
        case binaryASCIIStringHighByte
        /// A binary dictionary whose key is not a string: Foundation gives an `AnyHashable`-keyed
        /// dictionary, we refuse it (an Info.plist's keys are strings, and Apple's parser wants them).
        case binaryNonStringKey
        /// Text that is neither XML nor a `bplist00` file: Foundation reads it as an OpenStep
        /// (old-style ASCII) plist, which Info.plists never are; we refuse it, and take any
        /// `bplist` start as binary, to say which version is unsupported.
        case openStepText
        /// A damaged XML declaration or DOCTYPE: Foundation skips the prologue unread, we check it;
        /// with the fixture's own prologue back, both read the same value.
        case xmlPrologue
        /// Text between a tag's name and its `>` (`<string   <string>`, `<plist version=#1.0">`):
        /// Foundation skips it unread; we refuse it, since Xcode writes no attributes but
        /// `<plist version="1.0">` and such a file is damaged.
        case xmlInsideTag
        /// An odd number of quotes before the DOCTYPE's first `>` (a quoted `>`, or a quote added or
        /// lost): we read its quoted strings as XML says, so a `>` inside quotes does not end it;
        /// Foundation ends it at the first `>`. So one of the two meets stray text or no end.
        /// (Xcode's DOCTYPE is fixed text.)
        case doctypeQuotes
        /// Base64 with a wrong length or padding inside `<data>`: Foundation decodes what it can;
        /// we refuse it (Xcode always writes whole groups, so the file is
        /// damaged and `check` says where).
        case xmlBase64
        /// Content after `</plist>`: Foundation stops reading there, we refuse the stray content;
        /// cut at `</plist>`, both read the same value.
        case xmlAfterPlist

        func applies(to bytes: [UInt8], ours: Tree?, foundation: Tree?) -> Bool {
            let result = PropertyListOracleTests.ours(bytes)
            let isBinary = bytes.starts(with: Array("bplist00".utf8))
            switch self {
            case .binaryRepeatedKeyKeepsFirst:
                guard isBinary, let node = try? result.get() else { return false }
                return PropertyListOracleTests.tree(node, firstWins: true) == foundation
            case .binaryASCIIStringHighByte:
                guard isBinary, case .failure(let error) = result else { return false }
                return error.reason == "non-ASCII byte in ASCII string" && foundation != nil
            case .binaryNonStringKey:
                return isBinary && ours == nil
                    && foundation?.contains { $0 == .other("Dictionary<AnyHashable, Any>") } == true
            case .openStepText:
                let start = bytes.drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
                return ours == nil && foundation != nil && start.first != UInt8(ascii: "<") && !isBinary
            case .xmlPrologue:
                guard ours == nil, foundation != nil, let plist = bytes.firstRange(of: Array("<plist".utf8)) else {
                    return false
                }
                let prologue = Array(#"<?xml version="1.0" encoding="UTF-8"?>"#.utf8) + [0x0A]
                return PropertyListOracleTests.outcomes(prologue + bytes[plist.lowerBound...]).ours == foundation
            case .xmlInsideTag:
                guard case .failure(let error) = result, foundation != nil else { return false }
                return error.reason.hasSuffix(" tag") && error.reason.contains(" in <")
            case .xmlBase64:
                guard case .failure(let error) = result, foundation != nil else { return false }
                return error.reason.contains("base64")
            case .doctypeQuotes:
                guard let doctype = bytes.firstRange(of: Array("<!DOCTYPE".utf8)),
                    let end = bytes[doctype.upperBound...].firstIndex(of: UInt8(ascii: ">"))
                else { return false }
                // An odd number of quotes before the first '>': it is inside a quoted string.
                return bytes[doctype.upperBound..<end].filter { $0 == UInt8(ascii: "\"") }.count % 2 == 1
            case .xmlAfterPlist:
                guard ours == nil, foundation != nil, let end = bytes.firstRange(of: Array("</plist>".utf8)) else {
                    return false
                }
                return PropertyListOracleTests.outcomes(Array(bytes[..<end.upperBound])).ours == foundation
            }
        }
    }

    /// Why `bytes` is an agreement or a named difference; nil when it is neither.
    static func verdict(_ bytes: [UInt8]) -> String? {
        let (ours, foundation) = outcomes(bytes)
        if ours == foundation { return "agree" }
        return Difference.allCases.first { $0.applies(to: bytes, ours: ours, foundation: foundation) }?.rawValue
    }

    static func explain(_ bytes: [UInt8]) -> String {
        let (ours, foundation) = outcomes(bytes)
        var refusals = ""
        if case .failure(let error) = Self.ours(bytes) { refusals += "\nours refused: \(error)" }
        if case .failure(let error) = Self.foundation(bytes) { refusals += "\nFoundation refused: \(error)" }
        let prefix = String(decoding: bytes.prefix(120), as: UTF8.self).debugDescription
        return
            "ours: \(ours.map(\.description) ?? "refused")\nFoundation: \(foundation.map(\.description) ?? "refused")\(refusals)"
            + "\ninput (\(bytes.count) bytes, base64 \(Data(bytes).base64EncodedString())): \(prefix)"
    }

    @Test(
        "every fixture and fuzz-plist seed: the same values, or both refuse", arguments: seeds.map(\.lastPathComponent))
    func seed(_ name: String) throws {
        let url = try #require(Self.seeds.first { $0.lastPathComponent == name })
        let bytes = Array(try Data(contentsOf: url))
        #expect(Self.verdict(bytes) != nil, "\(Self.explain(bytes))")
    }

    @Test("400 mutations of the seeds: the same values, or both refuse, or a named difference")
    func mutations() throws {
        #expect(Self.seeds.count >= 50, "the seed directories moved? \(Self.seeds.count) files")
        let inputs = try Self.seeds.map { Array(try Data(contentsOf: $0)) }
        // Bytes the formats give meaning to: markup, the binary object markers, NUL, high bytes.
        let interesting =
            Array("<>/!?&;\"= \n".utf8) + [
                0x00, 0x08, 0x09, 0x10, 0x13, 0x23, 0x33, 0x40, 0x50, 0x5F, 0x60, 0xA0, 0xD0, 0xFF,
            ]
        var failures: [String] = []
        var tally: [String: Int] = [:]
        for bytes in OracleInputs.mutations(of: inputs, count: 400, interesting: interesting) {
            guard let verdict = Self.verdict(bytes) else {
                failures.append(Self.explain(bytes))
                continue
            }
            tally[verdict, default: 0] += 1
        }
        #expect(
            failures.isEmpty,
            "\(failures.count) mutations differ in no named way:\n\(failures.prefix(8).joined(separator: "\n\n"))")
        // The mutations must mostly exercise something: some accepted by both, some refused by both.
        #expect(tally["agree", default: 0] > 100, "\(tally)")
    }
}
