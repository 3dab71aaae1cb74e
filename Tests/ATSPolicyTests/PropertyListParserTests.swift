import ATSPolicy
import Foundation
import TLSTestSupport
import Testing
import TextFormats

// Swift Testing has a SourceLocation too; this file means the parser's.
import struct TextFormats.SourceLocation

// MARK: - Helpers

/// Fixtures are found next to this file, not through Bundle.module: the test target declares
/// no resources.
private let propertyListFixtures = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent()
    .appendingPathComponent("Fixtures")

private func plistFixture(_ name: String) throws -> [UInt8] {
    Array(try Data(contentsOf: propertyListFixtures.appendingPathComponent("plist").appendingPathComponent(name)))
}

private func parseXMLText(_ text: String) throws(PropertyListError) -> PropertyListNode {
    try PropertyListParser.parse(Array(text.utf8)).root
}

/// The error parsing `bytes` throws, or `nil` if it parses.
private func plistParseError(_ bytes: [UInt8]) -> PropertyListError? {
    do {
        _ = try PropertyListParser.parse(bytes)
        return nil
    } catch {
        return error
    }
}

/// The value of `<plist>VALUE</plist>`.
private func plistValue(ofXML valueXML: String) throws -> PropertyListValue {
    try parseXMLText("<plist version=\"1.0\">\(valueXML)</plist>").value
}

private func plistArray(_ values: PropertyListValue...) -> PropertyListValue {
    .array(values.map { PropertyListNode($0) })
}

private func plistDictionary(_ entries: KeyValuePairs<String, PropertyListValue>) -> PropertyListValue {
    .dictionary(entries.map { PropertyListEntry(key: $0.key, value: PropertyListNode($0.value)) })
}

/// Every node of a tree, with the key locations of dictionaries, in file order.
private func plistLocations(_ node: PropertyListNode) -> [SourceLocation] {
    switch node.value {
    case .array(let elements):
        [node.location] + elements.flatMap { plistLocations($0) }
    case .dictionary(let entries):
        [node.location] + entries.flatMap { [$0.keyLocation] + plistLocations($0.value) }
    default:
        [node.location]
    }
}

private func bigEndianBytes(_ value: UInt64, size: Int) -> [UInt8] {
    (0..<size).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
}

// MARK: - Fixtures

@Suite("Property list parser: fixtures")
struct PropertyListFixtureTests {
    static let allTypesExpected: PropertyListValue = plistDictionary([
        "string": .string("hello, world"),
        "unicode": .string("Grüße, 日本語, emoji 🚀"),
        "whitespace": .string("  two leading, two trailing  "),
        "entities": .string("<tag> & \"quoted\" 'single' AB"),
        "cdata": .string("<not a tag> & raw"),
        "empty string": .string(""),
        "zero": .integer(0),
        "positive": .integer(42),
        "negative": .integer(-17),
        "int64 max": .integer(.max),
        "int64 min": .integer(.min),
        "uint64 max": .unsignedInteger(.max),
        "real": .real(3.5),
        "negative real": .real(-0.25),
        "exponent": .real(1.5e10),
        "infinity": .real(.infinity),
        "true": .bool(true),
        "false": .bool(false),
        "date": .date(1_709_210_096),
        "epoch": .date(0),
        "data": .data(Array("Hello, World!".utf8)),
        "empty data": .data([]),
        "array": plistArray(
            .string("one"),
            .integer(2),
            plistArray(.bool(true), plistDictionary(["deep": .string("value")])),
            plistArray()
        ),
        "dictionary": plistDictionary([
            "nested": plistDictionary(["number": .integer(7)]), "empty": plistDictionary([:]),
        ]),
    ])

    @Test(arguments: [("all-types.xml", PropertyListFormat.xml), ("all-types.bplist", .binary)])
    func allTypes(name: String, format: PropertyListFormat) throws {
        let parsed = try PropertyListParser.parse(plistFixture(name))
        #expect(parsed.format == format)
        #expect(parsed.root.value == Self.allTypesExpected)
    }

    @Test func everyXMLFixtureParsesEqualToItsBinaryTwin() throws {
        let files = try #require(
            FileManager.default.enumerator(at: propertyListFixtures, includingPropertiesForKeys: nil))
        let xmlFiles = files.compactMap { $0 as? URL }
            .filter { $0.pathExtension == "xml" && !$0.lastPathComponent.contains("invalid") }
        #expect(xmlFiles.count >= 3)
        for xmlFile in xmlFiles {
            let xml = try PropertyListParser.parse(Array(Data(contentsOf: xmlFile)))
            let twin = xmlFile.deletingPathExtension().appendingPathExtension("bplist")
            let binary = try PropertyListParser.parse(Array(Data(contentsOf: twin)))
            #expect(xml.format == .xml)
            #expect(binary.format == .binary)
            #expect(xml.root == binary.root, "\(xmlFile.lastPathComponent)")
        }
    }

    @Test(arguments: ["app-info.xml", "app-info.bplist"])
    func appTransportSecurity(name: String) throws {
        let root = try PropertyListParser.parse(plistFixture(name)).root.value
        #expect(root.lookup("CFBundleIdentifier")?.value.value == .string("com.example.app"))
        let ats = try #require(root.lookup("NSAppTransportSecurity")?.value.value)
        #expect(ats.lookup("NSAllowsArbitraryLoads")?.value.value == .bool(true))
        let domains = try #require(ats.lookup("NSExceptionDomains")?.value.value)
        let example = try #require(domains.lookup("example.com")?.value.value)
        let expected = plistDictionary([
            "NSIncludesSubdomains": .bool(true),
            "NSExceptionMinimumTLSVersion": .string("TLSv1.0"),
        ])
        #expect(example == expected)
    }

    @Test func invalidFixtureReportsWhereItBreaks() throws {
        let error = try #require(plistParseError(plistFixture("invalid-mismatched-key.xml")))
        #expect(error.location == SourceLocation(line: 5, column: 1))
        #expect(error.reason == "expected </key> but found </dict>")
        #expect(error.description == "line 5, column 1: expected </key> but found </dict>")
    }

    @Test func binaryNodesCarryByteOffsets() throws {
        let root = try PropertyListParser.parse(plistFixture("all-types.bplist")).root
        let locations = plistLocations(root)
        #expect(locations.count > 40)
        for location in locations {
            let offset = try #require(location.byteOffset)
            #expect(offset >= 8)
            #expect(location.line == nil)
        }
    }
}

// MARK: - XML

@Suite("Property list parser: XML")
struct XMLPropertyListTests {
    @Test func nodesAndKeysCarryTheLocationOfTheirOpeningTag() throws {
        let xml = """
            <plist>
            <dict>
            \t<key>a</key>
            \t<array>
            \t\t<integer>1</integer>
            \t</array>
            </dict>
            </plist>
            """
        let root = try parseXMLText(xml)
        #expect(root.location == SourceLocation(line: 2, column: 1))
        guard case .dictionary(let entries) = root.value, let entry = entries.first else {
            Issue.record("expected a dictionary, got \(root.value)")
            return
        }
        #expect(entry.keyLocation == SourceLocation(line: 3, column: 2))
        #expect(entry.value.location == SourceLocation(line: 4, column: 2))
        guard case .array(let elements) = entry.value.value, let integer = elements.first else {
            Issue.record("expected an array, got \(entry.value.value)")
            return
        }
        #expect(integer.location == SourceLocation(line: 5, column: 3))
    }

    @Test func commentsCDATAAndReferencesMakeOneString() throws {
        let value = try plistValue(ofXML: "<string> a<!-- gone -->b&amp;<![CDATA[<c> & ]]>&#x1F680;&#233;\n</string>")
        #expect(value == .string(" ab&<c> & 🚀é\n"))
    }

    @Test func commentsAndProcessingInstructionsAreSkippedEverywhere() throws {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!-- before the doctype -->
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <?editor hint?>
            <plist version="1.0"><!-- inside plist -->
            <dict>
                <!-- before a key --><key>a</key><!-- between key and value --><?pi?><integer><!-- in --> 1 </integer>
            </dict>
            </plist>
            <!-- after the root -->
            """
        #expect(try parseXMLText(xml).value == plistDictionary(["a": .integer(1)]))
    }

    @Test func doctypeWithInternalSubsetIsSkipped() throws {
        let xml = "<!DOCTYPE plist [ <!ENTITY x \"a>b]\"> <!-- ] > --> ]>\n<plist><true/></plist>"
        #expect(try parseXMLText(xml).value == .bool(true))
    }

    @Test func duplicateKeysAreKeptInFileOrder() throws {
        let xml = "<dict><key>k</key><integer>1</integer><key>other</key><true/><key>k</key><integer>2</integer></dict>"
        let value = try plistValue(ofXML: xml)
        guard case .dictionary(let entries) = value else {
            Issue.record("expected a dictionary, got \(value)")
            return
        }
        #expect(entries.map(\.key) == ["k", "other", "k"])
        #expect(value.lookup("k")?.value.value == .integer(2))
    }

    @Test(arguments: [
        ("<dict><key>a</key><string>b</string></dict>", plistDictionary(["a": .string("b")])),
        ("<?xml version=\"1.0\"?>\n<string>bare</string>\n", .string("bare")),
        ("<array/>", plistArray()),
        ("  <true/>  ", .bool(true)),
        ("<integer>5</integer>", .integer(5)),
    ])
    func bareRootWithoutPlistElement(xml: String, expected: PropertyListValue) throws {
        #expect(try parseXMLText(xml).value == expected)
    }

    @Test func byteOrderMarkIsSkipped() throws {
        let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
        let withDeclaration = bom + Array("<?xml version=\"1.0\"?>\n<plist><string>x</string></plist>".utf8)
        #expect(try PropertyListParser.parse(withDeclaration).root.value == .string("x"))
        // Columns count from after the mark, as editors show them.
        let bare = try PropertyListParser.parse(bom + Array("\n <true/>".utf8))
        #expect(bare.format == .xml)
        #expect(bare.root.location == SourceLocation(line: 2, column: 2))
    }

    @Test(arguments: [
        ("<true/>", PropertyListValue.bool(true)), ("<false/>", .bool(false)), ("<true></true>", .bool(true)),
        ("<string/>", .string("")), ("<string></string>", .string("")), ("<dict/>", plistDictionary([:])),
        ("<dict> </dict>", plistDictionary([:])), ("<array/>", plistArray()), ("<data/>", .data([])),
        ("<dict><key/><string/></dict>", plistDictionary(["": .string("")])),
    ])
    func emptyAndSelfClosingElements(xml: String, expected: PropertyListValue) throws {
        #expect(try plistValue(ofXML: xml) == expected)
    }

    @Test(arguments: [
        ("0", PropertyListValue.integer(0)), ("-0", .integer(0)), ("+5", .integer(5)), (" 42\n", .integer(42)),
        ("007", .integer(7)), ("0x1F", .integer(31)), ("0XfF", .integer(255)), ("-0x10", .integer(-16)),
        ("9223372036854775807", .integer(.max)), ("-9223372036854775808", .integer(.min)),
        ("9223372036854775808", .unsignedInteger(9_223_372_036_854_775_808)),
        ("18446744073709551615", .unsignedInteger(.max)), ("0xFFFFFFFFFFFFFFFF", .unsignedInteger(.max)),
    ])
    func integers(text: String, expected: PropertyListValue) throws {
        #expect(try plistValue(ofXML: "<integer>\(text)</integer>") == expected)
    }

    @Test(arguments: [
        ("18446744073709551616", "does not fit in 64 bits"), ("-9223372036854775809", "does not fit in 64 bits"),
        ("0x10000000000000000", "does not fit in 64 bits"), ("abc", "invalid integer"), ("1.5", "invalid integer"),
        ("0x", "invalid integer"), ("1 2", "invalid integer"), ("--1", "invalid integer"), ("", "empty <integer>"),
    ])
    func invalidIntegers(text: String, phrase: String) throws {
        let error = try #require(plistParseError(Array("<integer>\(text)</integer>".utf8)))
        #expect(error.reason.contains(phrase))
    }

    @Test(arguments: [
        ("1.5", 1.5), ("-2", -2), (".5", 0.5), ("5.", 5), ("1e3", 1000), ("1E-3", 0.001), ("+4.25", 4.25),
        (" 7 ", 7), ("inf", .infinity), ("-inf", -.infinity), ("+inf", .infinity), ("INF", .infinity),
        ("infinity", .infinity), ("-Infinity", -.infinity),
    ])
    func reals(text: String, expected: Double) throws {
        #expect(try plistValue(ofXML: "<real>\(text)</real>") == .real(expected))
    }

    @Test func notANumber() throws {
        guard case .real(let value) = try plistValue(ofXML: "<real>nan</real>") else {
            Issue.record("expected a real")
            return
        }
        #expect(value.isNaN)
    }

    @Test(arguments: ["abc", "1e", "0x1p3", "1..2", "1,5", ".", "e5", "nan1"])
    func invalidReals(text: String) throws {
        let error = try #require(plistParseError(Array("<real>\(text)</real>".utf8)))
        #expect(error.reason.contains("invalid real"))
    }

    @Test(arguments: [
        ("1970-01-01T00:00:00Z", 0.0), ("2001-01-01T00:00:00Z", 978_307_200), ("2024-02-29T12:34:56Z", 1_709_210_096),
        ("1969-12-31T23:59:59Z", -1), ("0001-01-01T00:00:00Z", -62_135_596_800),
        ("9999-12-31T23:59:59Z", 253_402_300_799),
    ])
    func dates(text: String, secondsSince1970: Double) throws {
        #expect(try plistValue(ofXML: "<date>\(text)</date>") == .date(secondsSince1970))
    }

    @Test(arguments: [
        "2023-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2024-13-01T00:00:00Z", "2024-00-01T00:00:00Z",
        "2024-04-31T00:00:00Z", "2024-01-01 00:00:00Z", "2024-01-01T24:00:00Z", "2024-01-01T00:60:00Z",
        "2024-01-01T00:00:60Z", "2024-01-01", "2024-01-01T00:00:00", "2024-01-01T00:00:00+01:00",
        "+024-01-01T00:00:00Z",
    ])
    func invalidDates(text: String) throws {
        let error = try #require(plistParseError(Array("<date>\(text)</date>".utf8)))
        #expect(error.reason.contains("invalid date"))
    }

    @Test(arguments: [
        ("", [UInt8]()), ("QQ==", [65]), ("QUI=", [65, 66]), ("QUJD", [65, 66, 67]),
        ("\n\tQU\n\tJD\n\tRA==\n", [65, 66, 67, 68]), ("+/8=", [0xFB, 0xFF]),
    ])
    func base64Data(text: String, expected: [UInt8]) throws {
        #expect(try plistValue(ofXML: "<data>\(text)</data>") == .data(expected))
    }

    @Test func invalidUTF8IsReportedWhereItStarts() throws {
        let bytes = Array("<plist>\n<string>ab".utf8) + [0xC3] + Array("</string></plist>".utf8)
        let error = try #require(plistParseError(bytes))
        #expect(error.location == SourceLocation(line: 2, column: 11))
        #expect(error.reason.contains("invalid UTF-8"))
    }

    @Test func utf16FilesAreRejectedWithAHint() throws {
        let error = try #require(plistParseError([0xFF, 0xFE] + Array("<\0p\0".utf8)))
        #expect(error.reason.contains("UTF-16"))
        #expect(error.location.line == 1)
    }

    @Test func nestingUpToTheLimitIsAccepted() throws {
        let depth = 512
        let xml = String(repeating: "<array>", count: depth) + String(repeating: "</array>", count: depth)
        var node = try parseXMLText(xml)
        var levels = 1
        while case .array(let elements) = node.value, let first = elements.first {
            node = first
            levels += 1
        }
        #expect(levels == depth)
    }

    @Test func deepNestingIsAnErrorNotACrash() throws {
        let xml = "<plist>" + String(repeating: "<array>", count: 10_000)
        let error = try #require(plistParseError(Array(xml.utf8)))
        #expect(error.reason.contains("nesting deeper than 512"))
        // The 513th <array> starts after "<plist>" and 512 others.
        #expect(error.location == SourceLocation(line: 1, column: 1 + 7 + 512 * 7))
    }

    @Test func truncatedXMLFailsUnlessOnlyWhitespaceIsCut() throws {
        let bytes = try plistFixture("all-types.xml")
        for length in 0..<bytes.count {
            let cutOnlyWhitespace = bytes[length...].allSatisfy { $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: " ") }
            #expect((plistParseError(Array(bytes[..<length])) == nil) == cutOnlyWhitespace, "length \(length)")
        }
    }
}

/// One malformed XML document and where its error must be reported.
struct XMLPlistErrorCase: Sendable, CustomTestStringConvertible {
    var name: String
    var xml: String
    var line: Int
    var column: Int
    var phrase: String

    var testDescription: String { name }
}

@Suite("Property list parser: XML errors")
struct XMLPropertyListErrorTests {
    static let cases: [XMLPlistErrorCase] = [
        .init(
            name: "empty file", xml: "",
            line: 1, column: 1, phrase: "the file is empty"),
        .init(
            name: "only whitespace and comments", xml: "  \n<!-- c -->\n",
            line: 3, column: 1, phrase: "expected a root element"),
        .init(
            name: "text outside elements", xml: "\n  hello",
            line: 2, column: 3, phrase: "unexpected text outside of an element"),
        .init(
            name: "unterminated key", xml: "<plist>\n<dict>\n<key>a",
            line: 3, column: 1, phrase: "unterminated <key> element"),
        .init(
            name: "mismatched end tag", xml: "<plist>\n<dict>\n<key>a</key>\n<string>x</dict>",
            line: 4, column: 10, phrase: "expected </string> but found </dict>"),
        .init(
            name: "mismatched container end tag", xml: "<array></dict>",
            line: 1, column: 8, phrase: "expected </array> but found </dict>"),
        .init(
            name: "unknown element", xml: "<plist>\n  <foo/>\n</plist>",
            line: 2, column: 3, phrase: "unknown element <foo>"),
        .init(
            name: "element names are case-sensitive", xml: "<Dict/>",
            line: 1, column: 1, phrase: "unknown element <Dict>"),
        .init(
            name: "text inside dict", xml: "<dict>\n  oops\n</dict>",
            line: 2, column: 3, phrase: "unexpected text inside <dict>"),
        .init(
            name: "second element after root", xml: "<plist><true/></plist>\n<true/>",
            line: 2, column: 1, phrase: "unexpected content after the root element"),
        .init(
            name: "text after root", xml: "<plist><true/></plist>\n xyz",
            line: 2, column: 2, phrase: "unexpected content after the root element"),
        .init(
            name: "key without value", xml: "<dict>\n\t<key>a</key>\n</dict>",
            line: 2, column: 2, phrase: "key \"a\" has no value"),
        .init(
            name: "key followed by key", xml: "<dict><key>a</key><key>b</key><true/></dict>",
            line: 1, column: 7, phrase: "key \"a\" has no value"),
        .init(
            name: "value without key", xml: "<dict>\n<string>x</string>\n</dict>",
            line: 2, column: 1, phrase: "expected <key> but found <string>"),
        .init(
            name: "key outside dict", xml: "<array><key>a</key></array>",
            line: 1, column: 8, phrase: "<key> is only allowed inside <dict>"),
        .init(
            name: "empty plist", xml: "<plist>\n</plist>",
            line: 1, column: 1, phrase: "<plist> must contain exactly one value"),
        .init(
            name: "self-closed plist", xml: "<plist/>",
            line: 1, column: 1, phrase: "<plist> must contain exactly one value"),
        .init(
            name: "two values in plist", xml: "<plist>\n<true/>\n<false/>\n</plist>",
            line: 3, column: 1, phrase: "<plist> must contain exactly one value"),
        .init(
            name: "nested plist", xml: "<array><plist/></array>",
            line: 1, column: 8, phrase: "only allowed as the root element"),
        .init(
            name: "unterminated plist", xml: "<plist><true/>",
            line: 1, column: 1, phrase: "unterminated <plist> element"),
        .init(
            name: "unterminated dict", xml: "<plist>\n<dict>\n<key>a</key><true/>\n",
            line: 2, column: 1, phrase: "unterminated <dict> element"),
        .init(
            name: "end tag as root", xml: "</plist>",
            line: 1, column: 1, phrase: "unexpected </plist>"),
        .init(
            name: "unknown entity", xml: "<string>a &foo; b</string>",
            line: 1, column: 11, phrase: "unknown entity &foo;"),
        .init(
            name: "unterminated entity", xml: "<string>a &amp b</string>",
            line: 1, column: 11, phrase: "unterminated entity reference"),
        .init(
            name: "surrogate character reference", xml: "<string>&#xD800;</string>",
            line: 1, column: 9, phrase: "not a valid character"),
        .init(
            name: "NUL character reference", xml: "<string>&#0;</string>",
            line: 1, column: 9, phrase: "not a valid character"),
        .init(
            name: "huge character reference", xml: "<string>&#99999999999;</string>",
            line: 1, column: 9, phrase: "not a valid character"),
        .init(
            name: "malformed character reference", xml: "<string>&#12a;</string>",
            line: 1, column: 9, phrase: "invalid character reference"),
        .init(
            name: "unterminated comment", xml: "<plist>\n<!-- never closed\n",
            line: 2, column: 1, phrase: "unterminated comment"),
        .init(
            name: "unterminated CDATA", xml: "<string><![CDATA[abc",
            line: 1, column: 9, phrase: "unterminated CDATA section"),
        .init(
            name: "unterminated processing instruction", xml: "<?xml version",
            line: 1, column: 1, phrase: "unterminated processing instruction"),
        .init(
            name: "XML declaration after markup", xml: "<!-- c -->\n<?xml version=\"1.0\"?>\n<true/>",
            line: 2, column: 1, phrase: "XML declaration is only allowed at the start"),
        .init(
            name: "DOCTYPE after root", xml: "<plist><true/></plist>\n<!DOCTYPE plist>",
            line: 2, column: 1, phrase: "DOCTYPE declaration is only allowed before the root element"),
        .init(
            name: "unterminated DOCTYPE", xml: "<!DOCTYPE plist [ <!ENTITY a \"]>\" ",
            line: 1, column: 1, phrase: "unterminated DOCTYPE"),
        .init(
            name: "element inside string", xml: "<string>a<b/>c</string>",
            line: 1, column: 10, phrase: "unexpected <b> inside <string>"),
        .init(
            name: "text inside true", xml: "<true>yes</true>",
            line: 1, column: 7, phrase: "<true> must be empty"),
        .init(
            name: "empty integer", xml: "<plist>\n  <integer> </integer>\n</plist>",
            line: 2, column: 3, phrase: "empty <integer>"),
        .init(
            name: "invalid integer", xml: "<integer>\n  12x\n</integer>",
            line: 2, column: 3, phrase: "invalid integer \"12x\""),
        .init(
            name: "integer out of range", xml: "<integer>18446744073709551616</integer>",
            line: 1, column: 10, phrase: "does not fit in 64 bits"),
        .init(
            name: "invalid real", xml: "<real>1,5</real>",
            line: 1, column: 7, phrase: "invalid real"),
        .init(
            name: "invalid date", xml: "<date>2024-02-30T00:00:00Z</date>",
            line: 1, column: 7, phrase: "invalid date"),
        .init(
            name: "invalid base64 character", xml: "<data>\n  QUJD\n  QU*D\n</data>",
            line: 3, column: 5, phrase: "invalid character \"*\" in base64 data"),
        .init(
            name: "incomplete base64", xml: "<data>QUJ</data>",
            line: 1, column: 1, phrase: "incomplete"),
        .init(
            name: "base64 after padding", xml: "<data>QQ==QQ==</data>",
            line: 1, column: 11, phrase: "continues after its '=' padding"),
        .init(
            name: "misplaced base64 padding", xml: "<data>Q===</data>",
            line: 1, column: 8, phrase: "misplaced '='"),
        .init(
            name: "unterminated start tag", xml: "<plist version=\"1.0\"",
            line: 1, column: 1, phrase: "unterminated <plist> tag"),
        .init(
            name: "attribute without value", xml: "<plist version>",
            line: 1, column: 15, phrase: "expected '=' after attribute name"),
        .init(
            name: "unquoted attribute", xml: "<plist version=1.0>",
            line: 1, column: 16, phrase: "expected a quoted attribute value"),
        .init(
            name: "missing element name", xml: "< dict>",
            line: 1, column: 2, phrase: "expected an element name"),
        .init(
            name: "garbage in end tag", xml: "<string>a</string x>",
            line: 1, column: 19, phrase: "expected '>' to close </string>"),
        .init(
            name: "garbage after slash", xml: "<dict/x>",
            line: 1, column: 7, phrase: "expected '>' after '/'"),
        .init(
            name: "columns count characters, not bytes", xml: "<string>日本</string><true/>",
            line: 1, column: 20, phrase: "unexpected content after the root element"),
        .init(
            name: "CRLF line endings", xml: "<dict>\r\n<key>a</key>\r\n</dict>",
            line: 2, column: 1, phrase: "key \"a\" has no value"),
        .init(
            name: "CR line endings", xml: "<dict>\r\r<key>a</key>\r</dict>",
            line: 3, column: 1, phrase: "key \"a\" has no value"),
    ]

    @Test(arguments: cases)
    func errorIsReportedAtItsLocation(_ testCase: XMLPlistErrorCase) throws {
        let error = try #require(plistParseError(Array(testCase.xml.utf8)))
        #expect(error.location == SourceLocation(line: testCase.line, column: testCase.column), "\(error)")
        #expect(error.reason.contains(testCase.phrase), "\(error)")
    }
}

// MARK: - Binary

/// One malformed binary plist and where its error must be reported.
struct BinaryPlistErrorCase: Sendable, CustomTestStringConvertible {
    var name: String
    var bytes: [UInt8]
    var byteOffset: Int
    var phrase: String

    var testDescription: String { name }
}

@Suite("Property list parser: binary")
struct BinaryPropertyListTests {
    /// Writes binary property lists by hand, for shapes no writer produces: cycles, bad markers,
    /// 32-bit reals, UIDs and sets.
    private struct BinaryPlistBuilder {
        var objects: [[UInt8]] = []
        /// Width of object references inside arrays and dictionaries.
        var referenceSize = 1

        @discardableResult
        mutating func add(_ object: [UInt8]) -> Int {
            objects.append(object)
            return objects.count - 1
        }

        /// An array (marker 0xA, or 0xC for a set) of fewer than 15 references.
        @discardableResult
        mutating func addArray(_ references: [Int], marker: UInt8 = 0xA0) -> Int {
            add(
                [marker | UInt8(references.count)]
                    + references.flatMap { bigEndianBytes(UInt64($0), size: referenceSize) })
        }

        @discardableResult
        mutating func addDictionary(keys: [Int], values: [Int]) -> Int {
            add(
                [0xD0 | UInt8(keys.count)] + (keys + values).flatMap { bigEndianBytes(UInt64($0), size: referenceSize) }
            )
        }

        /// Object 0 is at byte 8, right after the magic.
        func build(top: Int = 0) -> [UInt8] {
            var bytes = Array("bplist00".utf8)
            var offsets: [Int] = []
            for object in objects {
                offsets.append(bytes.count)
                bytes += object
            }
            let tableStart = bytes.count
            let offsetSize = tableStart < 256 ? 1 : 4
            for offset in offsets { bytes += bigEndianBytes(UInt64(offset), size: offsetSize) }
            bytes += [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(referenceSize)]
            bytes += bigEndianBytes(UInt64(objects.count), size: 8)
            bytes += bigEndianBytes(UInt64(top), size: 8)
            bytes += bigEndianBytes(UInt64(tableStart), size: 8)
            return bytes
        }

        /// A file holding only `object`.
        static func single(_ object: [UInt8]) -> [UInt8] {
            var builder = BinaryPlistBuilder()
            builder.add(object)
            return builder.build()
        }
    }

    @Test(
        arguments: [
            ("false", [0x08], PropertyListValue.bool(false)),
            ("true", [0x09], .bool(true)),
            ("1-byte integer is unsigned", [0x10, 0xFF], .integer(255)),
            ("2-byte integer", [0x11, 0x01, 0x00], .integer(256)),
            ("4-byte integer is unsigned", [0x12, 0xFF, 0xFF, 0xFF, 0xFF], .integer(4_294_967_295)),
            ("8-byte integer is signed", [0x13] + bigEndianBytes(.max, size: 8), .integer(-1)),
            (
                "16-byte unsigned integer", [0x14] + bigEndianBytes(0, size: 8) + bigEndianBytes(.max, size: 8),
                .unsignedInteger(.max)
            ),
            ("16-byte small integer", [0x14] + bigEndianBytes(0, size: 8) + bigEndianBytes(5, size: 8), .integer(5)),
            (
                "16-byte negative integer", [0x14] + bigEndianBytes(.max, size: 8) + bigEndianBytes(1 << 63, size: 8),
                .integer(.min)
            ),
            ("32-bit real", [0x22, 0x3F, 0xC0, 0x00, 0x00], .real(1.5)),
            ("64-bit real", [0x23] + bigEndianBytes(2.5.bitPattern, size: 8), .real(2.5)),
            ("date at the 2001 epoch", [0x33] + bigEndianBytes(0.0.bitPattern, size: 8), .date(978_307_200)),
            ("date before 1970", [0x33] + bigEndianBytes((-978_307_201.0).bitPattern, size: 8), .date(-1)),
            ("data", [0x42, 0xDE, 0xAD], .data([0xDE, 0xAD])),
            ("empty data", [0x40], .data([])),
            ("ASCII string", [0x53] + Array("abc".utf8), .string("abc")),
            (
                "long ASCII string", [0x5F, 0x10, 20] + Array("twenty characters!!!".utf8),
                .string("twenty characters!!!")
            ),
            ("2-byte length", [0x4F, 0x11, 0x00, 0x02, 0x01, 0x02], .data([1, 2])),
            ("UTF-16 string", [0x63, 0x00, 0xE9, 0xD8, 0x3D, 0xDE, 0x80], .string("é🚀")),
            ("1-byte UID", [0x80, 0x05], .uid(5)),
            ("2-byte UID", [0x81, 0x01, 0x00], .uid(256)),
            ("empty array", [0xA0], plistArray()),
            ("empty dictionary", [0xD0], plistDictionary([:])),
        ] as [(String, [UInt8], PropertyListValue)])
    func scalars(name: String, object: [UInt8], expected: PropertyListValue) throws {
        let parsed = try PropertyListParser.parse(BinaryPlistBuilder.single(object))
        #expect(parsed.format == .binary)
        #expect(parsed.root.value == expected)
        #expect(parsed.root.location == SourceLocation(byteOffset: 8))
    }

    @Test func dictionaryKeysAndValuesCarryTheirObjectOffsets() throws {
        var builder = BinaryPlistBuilder()
        builder.addDictionary(keys: [1, 2], values: [3, 3])  // 8..<13
        builder.add([0x51, UInt8(ascii: "a")])  // 13
        builder.add([0x51, UInt8(ascii: "b")])  // 15
        builder.add([0x09])  // 17, shared by both entries
        let root = try PropertyListParser.parse(builder.build()).root
        #expect(root.value == plistDictionary(["a": .bool(true), "b": .bool(true)]))
        #expect(root.location.byteOffset == 8)
        guard case .dictionary(let entries) = root.value else { return }
        #expect(entries.map(\.keyLocation.byteOffset) == [13, 15])
        #expect(entries.map(\.value.location.byteOffset) == [17, 17])
    }

    @Test func setIsReadAsAnArray() throws {
        var builder = BinaryPlistBuilder()
        builder.addArray([1, 2], marker: 0xC0)
        builder.add([0x09])
        builder.add([0x10, 0x07])
        #expect(try PropertyListParser.parse(builder.build()).root.value == plistArray(.bool(true), .integer(7)))
    }

    @Test func sharedObjectsThatAreNotCyclesAreAccepted() throws {
        var builder = BinaryPlistBuilder()
        builder.addArray([1, 1])
        builder.addArray([2])
        builder.add([0x09])
        let expected = plistArray(plistArray(.bool(true)), plistArray(.bool(true)))
        #expect(try PropertyListParser.parse(builder.build()).root.value == expected)
    }

    @Test func nonZeroTopObject() throws {
        var builder = BinaryPlistBuilder()
        builder.add([0x08])
        builder.addArray([0])
        let root = try PropertyListParser.parse(builder.build(top: 1)).root
        #expect(root.value == plistArray(.bool(false)))
        #expect(root.location.byteOffset == 9)
    }

    static let errorCases: [BinaryPlistErrorCase] = {
        var cases: [BinaryPlistErrorCase] = []
        func add(_ name: String, _ bytes: [UInt8], at offset: Int, _ phrase: String) {
            cases.append(BinaryPlistErrorCase(name: name, bytes: bytes, byteOffset: offset, phrase: phrase))
        }
        let single = BinaryPlistBuilder.single
        let valid = single([0x09])
        /// `valid` with the trailer field at `field` (0–31 from the trailer's start) overwritten.
        func patchingTrailer(at field: Int, with replacement: [UInt8]) -> [UInt8] {
            var patched = valid
            let start = valid.count - 32 + field
            patched.replaceSubrange(start..<start + replacement.count, with: replacement)
            return patched
        }
        add("magic only", Array("bplist00".utf8), at: 0, "too short")
        add(
            "other version", Array("bplist01".utf8) + valid.dropFirst(8), at: 6,
            "unsupported binary property list version")
        add("null object", single([0x00]), at: 8, "null")
        add("fill byte", single([0x0F]), at: 8, "fill byte")
        add("unknown type", single([0x70, 0x00]), at: 8, "unsupported object")
        add("2-byte real", single([0x21, 0x00, 0x00]), at: 8, "unsupported object real")
        add("date of the wrong size", single([0x32, 0, 0, 0, 0]), at: 8, "unsupported object date")
        add("32-byte integer", single([0x15] + [UInt8](repeating: 0, count: 32)), at: 8, "invalid integer size")
        add(
            "integer beyond 64 bits", single([0x14] + bigEndianBytes(1, size: 8) + bigEndianBytes(0, size: 8)), at: 8,
            "does not fit in 64 bits")
        add("9-byte UID", single([0x88] + [UInt8](repeating: 1, count: 9)), at: 8, "unsupported object UID")
        add("non-ASCII byte in ASCII string", single([0x52, 0x41, 0xC3]), at: 10, "non-ASCII")
        add("lone surrogate", single([0x61, 0xD8, 0x00]), at: 8, "invalid UTF-16")
        add("string past its end", single([0x55, 0x41]), at: 8, "extends past the end")
        add("integer past its end", single([0x13, 0x00]), at: 8, "extends past the end")
        add("negative length", single([0x4F, 0x13] + bigEndianBytes(.max, size: 8)), at: 9, "invalid length")
        add(
            "huge length", single([0x4F, 0x13] + bigEndianBytes(UInt64(Int64.max), size: 8)), at: 8,
            "extends past the end")
        add(
            "huge dictionary", single([0xDF, 0x13] + bigEndianBytes(UInt64(Int64.max), size: 8)), at: 8,
            "extends past the end")
        add("length that is not an integer", single([0x4F, 0x22, 0, 0, 0, 0]), at: 9, "invalid length marker")
        add("length missing", single([0x5F]), at: 8, "truncated")
        add("reference out of range", single([0xA1, 0x05]), at: 9, "object reference is out of range")

        var nonStringKey = BinaryPlistBuilder()
        nonStringKey.addDictionary(keys: [1], values: [2])
        nonStringKey.add([0x10, 0x01])
        nonStringKey.add([0x09])
        add(
            "integer as dictionary key", nonStringKey.build(), at: 11,
            "dictionary key must be a string, found integer (dictionary at byte 8)")

        var containerKey = BinaryPlistBuilder()
        containerKey.addDictionary(keys: [0], values: [0])
        add(
            "dictionary as its own key", containerKey.build(), at: 8,
            "dictionary key must be a string, found dictionary")

        add("array containing itself", single([0xA1, 0x00]), at: 8, "object 0 contains itself")
        var indirect = BinaryPlistBuilder()
        indirect.addArray([1])
        indirect.addArray([2])
        indirect.addArray([0])
        add("indirect cycle", indirect.build(), at: 8, "object 0 contains itself")
        var dictionaryCycle = BinaryPlistBuilder()
        dictionaryCycle.addDictionary(keys: [1], values: [2])
        dictionaryCycle.add([0x51, UInt8(ascii: "k")])
        dictionaryCycle.addArray([0])
        add("cycle through a dictionary value", dictionaryCycle.build(), at: 8, "object 0 contains itself")

        add("offset size 0", patchingTrailer(at: 6, with: [0]), at: valid.count - 26, "invalid offset size 0")
        add(
            "reference size 9", patchingTrailer(at: 7, with: [9]), at: valid.count - 25,
            "invalid object reference size 9")
        add(
            "no objects", patchingTrailer(at: 8, with: bigEndianBytes(0, size: 8)), at: valid.count - 24,
            "invalid object count")
        add(
            "object count beyond Int", patchingTrailer(at: 8, with: bigEndianBytes(.max, size: 8)),
            at: valid.count - 24,
            "invalid object count")
        add(
            "object count too large for the table", patchingTrailer(at: 8, with: bigEndianBytes(1 << 62, size: 8)),
            at: valid.count - 8, "offset table is out of bounds")
        add(
            "top object out of range", patchingTrailer(at: 16, with: bigEndianBytes(1, size: 8)), at: valid.count - 16,
            "top object index is out of range")
        let insideTrailer = bigEndianBytes(UInt64(valid.count - 20), size: 8)
        add(
            "offset table inside the trailer", patchingTrailer(at: 24, with: insideTrailer),
            at: valid.count - 8, "offset table is out of bounds")
        add(
            "offset table over the header", patchingTrailer(at: 24, with: bigEndianBytes(3, size: 8)),
            at: valid.count - 8,
            "offset table is out of bounds")
        var badOffset = valid
        badOffset[9] = 2  // object 0's table entry points at the header
        add("object offset in the header", badOffset, at: 9, "offset of object 0 is out of bounds")
        badOffset[9] = 9  // …and now at the offset table itself
        add("object offset in the offset table", badOffset, at: 9, "offset of object 0 is out of bounds")
        return cases
    }()

    @Test(arguments: errorCases)
    func errorIsReportedAtItsByteOffset(_ testCase: BinaryPlistErrorCase) throws {
        let error = try #require(plistParseError(testCase.bytes))
        #expect(error.location == SourceLocation(byteOffset: testCase.byteOffset), "\(error)")
        #expect(error.reason.contains(testCase.phrase), "\(error)")
    }

    /// A chain of arrays, each holding the next; references are two bytes wide.
    private func arrayChain(depth: Int) -> [UInt8] {
        var builder = BinaryPlistBuilder(referenceSize: 2)
        for index in 1..<depth { builder.addArray([index]) }
        builder.addArray([])
        return builder.build()
    }

    @Test func nestingUpToTheLimitIsAccepted() throws {
        #expect(throws: Never.self) { try PropertyListParser.parse(arrayChain(depth: 512)) }
    }

    @Test func deepNestingIsAnErrorNotACrash() throws {
        let error = try #require(plistParseError(arrayChain(depth: 5_000)))
        #expect(error.reason.contains("nesting deeper than 512"))
    }

    @Test func exponentialExpansionThroughSharedObjectsIsRejected() throws {
        // Each array holds the next one twice: 64 objects stand for 2^63 values.
        var builder = BinaryPlistBuilder()
        for index in 1..<64 { builder.addArray([index, index]) }
        builder.add([0x09])
        let error = try #require(plistParseError(builder.build()))
        #expect(error.reason.contains("expands to more than"))
    }

    @Test(arguments: ["all-types.bplist", "app-info.bplist", "array-root.bplist"])
    func everyTruncationFails(name: String) throws {
        let bytes = try plistFixture(name)
        for length in 0..<bytes.count {
            #expect(plistParseError(Array(bytes[..<length])) != nil, "length \(length)")
        }
    }

    @Test(arguments: ["all-types.bplist", "app-info.bplist", "array-root.bplist"])
    func corruptTrailerAndOffsetTableNeverCrash(name: String) throws {
        let bytes = try plistFixture(name)
        let tableStart = Int(bytes[(bytes.count - 8)...].reduce(0) { $0 << 8 | UInt64($1) })
        var failures = 0
        for position in tableStart..<bytes.count {
            for mask: UInt8 in [0x01, 0x10, 0x80, 0xFF] {
                var corrupted = bytes
                corrupted[position] ^= mask
                if plistParseError(corrupted) != nil { failures += 1 }
            }
        }
        // Most flips break the file; some only change unused trailer bytes.
        #expect(failures > (bytes.count - tableStart) * 2)
    }

    @Test func randomCorruptionNeverCrashes() throws {
        var generator = SplitMix64(state: 0x5EED)
        let names = ["all-types.bplist", "app-info.bplist", "array-root.bplist", "all-types.xml", "app-info.xml"]
        let originals = try names.map(plistFixture)
        for _ in 0..<3_000 {
            var bytes = originals[Int.random(in: 0..<originals.count, using: &generator)]
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            _ = plistParseError(bytes)
        }
    }
}
