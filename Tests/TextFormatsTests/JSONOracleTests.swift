import Foundation
import TLSTestSupport
import Testing
import TextFormats

/// Our JSON parser (the one `JSONLines` runs over every log line `report`, `har` and the live view
/// read) against Foundation's `JSONSerialization` on the same bytes: every line of the report and
/// har fixtures, the JSONTestSuite cases, and a few hundred deterministic mutations of them. Both
/// must give the same value, or both refuse, except for the differences named in
/// ``JSONOracleTests/Difference``.
@Suite("JSON: our parser against Foundation's")
struct JSONOracleTests {
    /// The log fixtures, one input per line (gzip files are left out: Foundation cannot inflate
    /// them, and their lines are the plain files' lines), and each file whole.
    static let lines: [[UInt8]] = ["Tests/ATSProxyCtlTests/Fixtures/report", "Tests/ATSProxyCtlTests/Fixtures/har"]
        .flatMap(OracleInputs.files(in:))
        .filter { $0.pathExtension != "gz" }
        .flatMap { url -> [[UInt8]] in
            let bytes = Array((try? Data(contentsOf: url)) ?? Data())
            return [bytes] + bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true).map(Array.init)
        }
    static let suite = (JSONTestSuiteTests.accepted + JSONTestSuiteTests.rejected).map(\.bytes)

    /// A value both parsers' results are converted into. Numbers compare by value: exactly when
    /// both are integers that fit Int64, else as Doubles.
    indirect enum Tree: Equatable, CustomStringConvertible {
        case object([String: Tree])
        case array([Tree])
        case string(String)
        case number(Double, exact: Int64?)
        case boolean(Bool)
        case null
        case other(String)

        static func == (a: Tree, b: Tree) -> Bool {
            switch (a, b) {
            case (.object(let x), .object(let y)): x == y
            case (.array(let x), .array(let y)): x == y
            case (.string(let x), .string(let y)): x == y
            case (.number(let x, let i), .number(let y, let j)): i != nil && j != nil ? i == j : x == y
            case (.boolean(let x), .boolean(let y)): x == y
            case (.null, .null): true
            case (.other(let x), .other(let y)): x == y
            default: false
            }
        }

        /// Equal but for numbers, which may differ by a relative 1e-14.
        func isClose(to other: Tree) -> Bool {
            switch (self, other) {
            case (.object(let x), .object(let y)):
                x.count == y.count && x.allSatisfy { key, value in y[key].map(value.isClose) ?? false }
            case (.array(let x), .array(let y)): x.count == y.count && zip(x, y).allSatisfy { $0.isClose(to: $1) }
            case (.number(let x, _), .number(let y, _)): abs(x - y) <= 1e-14 * max(abs(x), abs(y))
            default: self == other
            }
        }

        var description: String {
            switch self {
            case .object(let x):
                "{"
                    + x.sorted { $0.key < $1.key }.map { "\($0.key.debugDescription): \($0.value)" }.joined(
                        separator: ", ") + "}"
            case .array(let x): "[" + x.map(\.description).joined(separator: ", ") + "]"
            case .string(let x): x.debugDescription
            case .number(let x, let exact): exact.map { "\($0)" } ?? "\(x)"
            case .boolean(let x): "\(x)"
            case .null: "null"
            case .other(let x): x
            }
        }
    }

    static func tree(_ value: JSONValue) -> Tree {
        switch value {
        case .null: .null
        case .bool(let x): .boolean(x)
        case .int(let x): .number(Double(x), exact: x)
        case .double(let x): .number(x, exact: Int64(exactly: x))
        case .string(let x): .string(x)
        case .array(let x): .array(x.map(tree))
        // The last of a repeated key, as a dictionary keeps it.
        case .object(let fields):
            .object(Dictionary(fields.map { ($0.0, tree($0.1)) }, uniquingKeysWith: { _, last in last }))
        }
    }

    static func tree(_ value: Any) -> Tree {
        switch value {
        case let x as [String: Any]: .object(x.mapValues(tree))
        case let x as [Any]: .array(x.map(tree))
        case let x as String: .string(x)
        case is NSNull: .null
        case let x as NSNumber where x.isBoolean: .boolean(x.boolValue)
        case let x as NSNumber where x.isReal: .number(x.doubleValue, exact: Int64(exactly: x.doubleValue))
        case let x as NSNumber where String(cString: x.objCType) == "Q":
            .number(x.doubleValue, exact: Int64(exactly: x.uint64Value))
        case let x as NSNumber: .number(x.doubleValue, exact: x.int64Value)
        default: .other("\(type(of: value))")
        }
    }

    /// What each side made of `bytes`: a tree, or nil for a refusal.
    static func outcomes(_ bytes: [UInt8]) -> (ours: Tree?, foundation: Tree?) {
        let ours = (try? JSONValue(parsing: bytes)).map(tree)
        let foundation = (try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])).map(tree)
        return (ours, foundation)
    }

    /// A way the two legitimately differ, each with the reason; an input that differs in none of
    /// these ways is a failure.
    enum Difference: String, CaseIterable {
        /// A long decimal fraction (`-0.000…001`, 80 digits): Foundation on Linux rounds it a few
        /// units in the last place off; ours is correctly rounded (the shortest text of our Double
        /// is the input's value). Both read the same number to 1e-14.
        case foundationRoundsLongFractions
        /// A comma before `]` or `}`: Foundation on Linux accepts it, RFC 8259 does not and neither
        /// do we (the log is ours, and a writer that leaves one is broken). Without the comma, both
        /// read the same value.
        case foundationAcceptsTrailingComma

        func applies(to bytes: [UInt8], ours: Tree?, foundation: Tree?) -> Bool {
            switch self {
            case .foundationRoundsLongFractions:
                guard let ours, let foundation else { return false }
                return ours.isClose(to: foundation)
            case .foundationAcceptsTrailingComma:
                guard ours == nil, foundation != nil else { return false }
                return JSONOracleTests.outcomes(JSONOracleTests.withoutTrailingCommas(bytes)).ours == foundation
            }
        }
    }

    /// `bytes` without each comma that only whitespace separates from a `]` or `}` (strings are
    /// not skipped: a comma inside one changes the value, and the comparison then fails).
    static func withoutTrailingCommas(_ bytes: [UInt8]) -> [UInt8] {
        var result: [UInt8] = []
        for (index, byte) in bytes.enumerated() {
            if byte == UInt8(ascii: ","),
                let next = bytes[(index + 1)...].first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }),
                next == UInt8(ascii: "]") || next == UInt8(ascii: "}")
            {
                continue
            }
            result.append(byte)
        }
        return result
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
        do { _ = try JSONValue(parsing: bytes) } catch { refusals += "ours refused: \(error)\n" }
        do { _ = try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) } catch {
            refusals += "Foundation refused: \(error)\n"
        }
        let text = String(decoding: bytes.prefix(160), as: UTF8.self).debugDescription
        return "ours: \(ours.map { String($0.description.prefix(200)) } ?? "refused")\n"
            + "Foundation: \(foundation.map { String($0.description.prefix(200)) } ?? "refused")\n\(refusals)input (\(bytes.count) bytes): \(text)"
    }

    /// Runs every input and reports the ones that differ in no named way.
    static func check(_ inputs: [[UInt8]]) -> (failures: [String], tally: [String: Int]) {
        var failures: [String] = []
        var tally: [String: Int] = [:]
        for bytes in inputs {
            guard let verdict = verdict(bytes) else {
                failures.append(explain(bytes))
                continue
            }
            tally[verdict, default: 0] += 1
        }
        return (failures, tally)
    }

    @Test("every line of the report and har fixtures, and each file whole: the same value, or both refuse")
    func fixtureLines() {
        #expect(Self.lines.count > 20, "the fixtures moved? \(Self.lines.count) inputs")
        let (failures, tally) = Self.check(Self.lines)
        #expect(
            failures.isEmpty,
            "\(failures.count) inputs differ in no named way:\n\(failures.prefix(8).joined(separator: "\n\n"))")
        #expect(tally["agree", default: 0] > 20, "\(tally)")
    }

    @Test("the JSONTestSuite cases: the same value, or both refuse, or a named difference")
    func testSuite() {
        let (failures, tally) = Self.check(Self.suite)
        #expect(
            failures.isEmpty,
            "\(failures.count) cases differ in no named way:\n\(failures.prefix(8).joined(separator: "\n\n"))")
        #expect(tally["agree", default: 0] > 50, "\(tally)")
    }

    @Test(
        "400 mutations of the fixture lines and the suite's cases: the same value, or both refuse, or a named difference"
    )
    func mutations() {
        // Bytes JSON gives meaning to, and some it forbids (NUL, a raw control character, a lone
        // continuation byte, a BOM's first byte).
        let interesting = Array("{}[]:,\"\\-+.eE0u ntf".utf8) + [0x00, 0x01, 0x0A, 0x7F, 0x80, 0xC0, 0xEF, 0xFF]
        let (failures, tally) = Self.check(
            OracleInputs.mutations(of: Self.lines + Self.suite, count: 400, interesting: interesting))
        #expect(
            failures.isEmpty,
            "\(failures.count) mutations differ in no named way:\n\(failures.prefix(8).joined(separator: "\n\n"))")
        #expect(tally["agree", default: 0] > 100, "\(tally)")
    }
}
