import Testing
import TextFormats

/// The error parsing `bytes` throws, or `nil` if it parses.
func jsonParseError(_ bytes: [UInt8]) -> JSONParseError? {
    do {
        _ = try JSONValue(parsing: bytes)
        return nil
    } catch {
        return error
    }
}

/// One input the parser must reject, and where and why.
struct InvalidJSONCase: Sendable, CustomTestStringConvertible {
    var input: [UInt8]
    var line: Int
    var column: Int
    var reason: String

    init(_ input: String, _ line: Int, _ column: Int, _ reason: String) {
        self.init(bytes: Array(input.utf8), line, column, reason)
    }

    init(bytes: [UInt8], _ line: Int, _ column: Int, _ reason: String) {
        self.input = bytes
        self.line = line
        self.column = column
        self.reason = reason
    }

    var testDescription: String { String(decoding: input.prefix(40), as: UTF8.self).debugDescription }
}

@Suite("JSON parser")
struct JSONParserTests {
    @Test(
        "values come out as the kind the text says",
        arguments: [
            ("null", JSONValue.null),
            ("true", true),
            (" \t\r\n false \n", false),
            ("0", 0),
            ("-0", 0),
            ("42", 42),
            ("-17", -17),
            ("9223372036854775807", .int(Int64.max)),
            ("-9223372036854775808", .int(Int64.min)),
            // One past Int64's range either way: a double, not an error.
            ("9223372036854775808", .double(9_223_372_036_854_775_808)),
            ("-9223372036854775809", .double(-9_223_372_036_854_775_808)),
            ("123456789012345678901234567890", .double(1.2345678901234568e29)),
            ("1.5", .double(1.5)),
            ("-0.0", .double(-0.0)),
            ("1e2", .double(100)),
            ("1E+2", .double(100)),
            ("25e-1", .double(2.5)),
            ("0.1", .double(0.1)),
            // Correctly rounded: the halfway case 2^53 + 1 rounds to even.
            ("9007199254740993.0", .double(9_007_199_254_740_992)),
            ("2.2250738585072014e-308", .double(2.2250738585072014e-308)),
            ("1.7976931348623157e308", .double(.greatestFiniteMagnitude)),
            ("5e-324", .double(.leastNonzeroMagnitude)),
            // Too small to represent is not an error: it rounds to zero as IEEE 754 says.
            ("1e-400", .double(0)),
            (#""""#, ""),
            (#""plain""#, "plain"),
            (#""\"\\\/\b\f\n\r\t""#, "\"\\/\u{8}\u{C}\n\r\t"),
            (#""\u0041\u00e9\u00E9\u4e2d\u0000""#, "Aéé中\u{0}"),
            (#""\ud83d\ude00 \uD834\uDD1E""#, "😀 𝄞"),
            ("\"é 日本 🙂\"", "é 日本 🙂"),
            (#""run\nrun\tend""#, "run\nrun\tend"),
            ("[]", .array([])),
            ("{}", .object([])),
            ("[ ]", .array([])),
            ("{ \n }", .object([])),
            ("[1,\"a\",null,[true,{}]]", .array([1, "a", nil, .array([true, .object([])])])),
            (#"{"b":1,"a":{"c":[]}}"#, .object([("b", 1), ("a", .object([("c", .array([]))]))])),
            // Duplicates are kept, in order.
            (#"{"a":1,"a":2,"b":3,"a":4}"#, .object([("a", 1), ("a", 2), ("b", 3), ("a", 4)])),
            (" { \"k\" : [ 1 , 2 ] } ", .object([("k", .array([1, 2]))])),
        ] as [(String, JSONValue)])
    func parsesValues(_ text: String, _ expected: JSONValue) throws {
        let fromString = try JSONValue(parsing: text)
        #expect(fromString == expected)
        #expect(fromString.serialized == expected.serialized)
        #expect(try JSONValue(parsing: Array(text.utf8)) == expected)
        // A collection without contiguous storage takes the copying path.
        #expect(try JSONValue(parsing: text.utf8) == expected)
    }

    @Test("the sign of negative zero survives as a double")
    func negativeZero() throws {
        let value = try JSONValue(parsing: "-0.0")
        #expect(value.doubleValue?.sign == .minus)
    }

    @Test("duplicate keys: the subscript answers with the first")
    func duplicateKeys() throws {
        let value = try JSONValue(parsing: #"{"a":1,"a":2}"#)
        #expect(value["a"] == 1)
        #expect(value.objectValue?.count == 2)
    }

    @Test(
        "invalid input is rejected with its line, column and reason",
        arguments: [
            InvalidJSONCase(#"{"a":1 "b":2}"#, 1, 8, "expected ',' or '}' after object member, found '\"'"),
            InvalidJSONCase(#"{"a":1"#, 1, 7, "expected ',' or '}' after object member, found end of input"),
            InvalidJSONCase("[1,2", 1, 5, "expected ',' or ']' after array element, found end of input"),
            InvalidJSONCase("[1 2]", 1, 4, "expected ',' or ']' after array element, found '2'"),
            InvalidJSONCase(#""abc"#, 1, 1, "unterminated string"),
            InvalidJSONCase("[\"abc\ndef\"]", 1, 2, "unterminated string (line break before the closing quote)"),
            InvalidJSONCase(#""a\x""#, 1, 3, "invalid escape \\x"),
            InvalidJSONCase(#""a\"#, 1, 1, "unterminated string"),
            InvalidJSONCase("\"\\\u{1}\"", 1, 2, "invalid escape (backslash followed by U+0001)"),
            InvalidJSONCase(#""\u12""#, 1, 2, "invalid \\u escape, expected four hex digits"),
            InvalidJSONCase(#""\ud800""#, 1, 2, "lone surrogate \\uD800"),
            InvalidJSONCase(#""\ud800\u0041""#, 1, 2, "lone surrogate \\uD800"),
            InvalidJSONCase(#""x\udc00""#, 1, 3, "lone surrogate \\uDC00"),
            InvalidJSONCase("\"a\u{1}b\"", 1, 3, "unescaped control character U+0001 in string"),
            // The column counts characters: é is two bytes but one column.
            InvalidJSONCase("\"é\u{1f}\"", 1, 3, "unescaped control character U+001F in string"),
            InvalidJSONCase("\"\t\"", 1, 2, "unescaped control character U+0009 in string"),
            InvalidJSONCase("1e400", 1, 1, "number out of range"),
            InvalidJSONCase("[-1e400]", 1, 2, "number out of range"),
            InvalidJSONCase("01", 1, 1, "leading zeros are not allowed"),
            InvalidJSONCase("-01", 1, 1, "leading zeros are not allowed"),
            InvalidJSONCase("-", 1, 2, "expected a digit after '-', found end of input"),
            InvalidJSONCase("-x", 1, 2, "expected a digit after '-', found 'x'"),
            InvalidJSONCase("1.", 1, 3, "expected a digit after the decimal point"),
            InvalidJSONCase("1.e5", 1, 3, "expected a digit after the decimal point"),
            InvalidJSONCase("1e+", 1, 4, "expected a digit in the exponent"),
            InvalidJSONCase("+1", 1, 1, "expected a value, found '+'"),
            InvalidJSONCase(".5", 1, 1, "expected a value, found '.'"),
            InvalidJSONCase("NaN", 1, 1, "expected a value, found 'N'"),
            InvalidJSONCase("[-Infinity]", 1, 3, "expected a digit after '-', found 'I'"),
            InvalidJSONCase("{} x", 1, 4, "trailing characters after the value"),
            InvalidJSONCase("1 2", 1, 3, "trailing characters after the value"),
            InvalidJSONCase(#"{"a":1}}"#, 1, 8, "trailing characters after the value"),
            InvalidJSONCase("[1,]", 1, 4, "trailing comma before ']'"),
            InvalidJSONCase(#"{"a":1, }"#, 1, 9, "trailing comma before '}'"),
            InvalidJSONCase("[,1]", 1, 2, "expected a value, found ','"),
            InvalidJSONCase(#"{"a" 1}"#, 1, 6, "expected ':' after object key, found '1'"),
            InvalidJSONCase("{1:2}", 1, 2, "expected a string key, found '1'"),
            InvalidJSONCase("{'a':2}", 1, 2, "expected a string key, found '''"),
            InvalidJSONCase("tru", 1, 1, "invalid literal, expected 'true'"),
            InvalidJSONCase("[nul]", 1, 2, "invalid literal, expected 'null'"),
            InvalidJSONCase("False", 1, 1, "expected a value, found 'F'"),
            InvalidJSONCase("// comment\n{}", 1, 1, "expected a value, found '/'"),
            InvalidJSONCase(#"{"a":/*c*/1}"#, 1, 6, "expected a value, found '/'"),
            InvalidJSONCase("", 1, 1, "expected a value, found end of input"),
            InvalidJSONCase("  \n  ", 2, 3, "expected a value, found end of input"),
            InvalidJSONCase("[1,\n  2,\n  x]", 3, 3, "expected a value, found 'x'"),
            // CRLF line ends count once.
            InvalidJSONCase("\r\n[\r\n1,\r\n]", 4, 1, "trailing comma before ']'"),
            InvalidJSONCase("[\u{C}]", 1, 2, "expected a value, found U+000C"),
            InvalidJSONCase("\u{FEFF}{}", 1, 1, "expected a value, found a byte order mark"),
            InvalidJSONCase("[é]", 1, 2, "expected a value, found 'é' (U+00E9)"),
            InvalidJSONCase(bytes: [0x22, 0xFF, 0x22], 1, 2, "invalid UTF-8"),
            InvalidJSONCase(bytes: Array("\"é".utf8) + [0x80, 0x22], 1, 3, "invalid UTF-8"),
            InvalidJSONCase(bytes: [0x22, 0x61, 0xC3, 0x22], 1, 3, "invalid UTF-8"),
            // Overlong, surrogate and beyond-U+10FFFF encodings.
            InvalidJSONCase(bytes: [0x22, 0xC0, 0xAF, 0x22], 1, 2, "invalid UTF-8"),
            InvalidJSONCase(bytes: [0x22, 0xED, 0xA0, 0x80, 0x22], 1, 2, "invalid UTF-8"),
            InvalidJSONCase(bytes: [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], 1, 2, "invalid UTF-8"),
            // Bad UTF-8 after an escape is still found at its own byte.
            InvalidJSONCase(bytes: Array(#""\n"#.utf8) + [0xFE, 0x22], 1, 4, "invalid UTF-8"),
            InvalidJSONCase(bytes: [0x5B, 0xFF, 0x5D], 1, 2, "invalid UTF-8"),
            InvalidJSONCase(bytes: [0x5B, 0x31, 0x2C, 0x0A, 0x80, 0x5D], 2, 1, "invalid UTF-8"),
        ])
    func rejects(_ testCase: InvalidJSONCase) throws {
        let error = try #require(jsonParseError(testCase.input))
        #expect(error.reason.hasPrefix(testCase.reason), "\(error)")
        #expect(error.line == testCase.line, "\(error)")
        #expect(error.column == testCase.column, "\(error)")
        #expect(error.description == "line \(error.line), column \(error.column): \(error.reason)")
    }

    @Test("the byte offset is the offending byte's, 0-based, counting bytes not characters")
    func offset() throws {
        let error = try #require(jsonParseError(Array("{\"é\":\n [1,]}".utf8)))
        #expect(error.offset == 11)
        #expect(error.line == 2)
        #expect(error.column == 5)
        #expect(error.location == SourceLocation(line: 2, column: 5, byteOffset: 11))
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: "[") }
    }

    @Test("100,000 open brackets give the depth error, not a crash", arguments: ["[", "{\"a\":", "[{\"a\":"])
    func hostileNesting(_ opener: String) throws {
        let input = Array(String(repeating: opener, count: 100_000).utf8)
        let error = try #require(jsonParseError(input))
        #expect(error.reason == "nesting deeper than 512")
        // The container that would be the 513th.
        let openerBytes = Array(opener.utf8)
        let expectedOffset = opener == "[{\"a\":" ? 256 * openerBytes.count : 512 * openerBytes.count
        #expect(error.offset == expectedOffset)
    }

    @Test("512 levels of nesting are allowed, 513 are not")
    func depthLimit() throws {
        func nested(_ depth: Int) -> String {
            String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        }
        var value = try JSONValue(parsing: nested(512))
        var depth = 0
        while let inner = value.arrayValue {
            depth += 1
            value = inner.first ?? .null
        }
        #expect(depth == 512)
        let error = try #require(jsonParseError(Array(nested(513).utf8)))
        #expect(error.column == 513)
        #expect(error.reason == "nesting deeper than 512")
    }

    @Test("accessors answer for their own kind only")
    func accessors() throws {
        let value = try JSONValue(parsing: #"{"s":"x","i":3,"d":2.5,"b":true,"n":null,"a":[1,2],"o":{"k":"v"}}"#)
        #expect(value["s"]?.stringValue == "x")
        #expect(value["i"]?.intValue == 3)
        #expect(value["i"]?.doubleValue == 3)
        #expect(value["d"]?.doubleValue == 2.5)
        #expect(value["d"]?.intValue == nil)
        #expect(value["b"]?.boolValue == true)
        #expect(value["n"]?.isNull == true)
        #expect(value["s"]?.isNull == false)
        #expect(value["a"]?.arrayValue == [1, 2])
        #expect(value["a"]?[1] == 2)
        #expect(value["a"]?[2] == nil)
        #expect(value["o"]?.objectValue?.map { $0.0 } == ["k"])
        #expect(value["s"]?.intValue == nil)
        #expect(value["i"]?.stringValue == nil)
        #expect(value.arrayValue == nil)
        #expect(value[0] == nil)
    }
}
