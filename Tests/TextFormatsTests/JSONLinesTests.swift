import Testing
import TextFormats

@Suite("JSON Lines")
struct JSONLinesTests {
    @Test("a bad middle line is reported with its own line number, and reading goes on")
    func badMiddleLine() throws {
        let text = "{\"a\":1}\n{\"a\":\n{\"b\":2}\n"
        let lines = Array(JSONLines(text))
        #expect(lines.map(\.number) == [1, 2, 3])
        #expect(try lines[0].result.get() == .object([("a", 1)]))
        #expect(try lines[2].result.get() == .object([("b", 2)]))
        guard case .failure(let error) = lines[1].result else {
            Issue.record("line 2 parsed")
            return
        }
        // Positioned in the whole buffer: line 2 starts at byte 8.
        #expect(error.line == 2)
        #expect(error.column == 6)
        #expect(error.offset == 13)
        #expect(error.reason == "expected a value, found end of input")
    }

    @Test("blank lines are skipped but counted; CRLF and a missing final newline are fine")
    func lineEnds() throws {
        let text = "\n[1]\r\n  \t \r\n\r\n\"x\"\r\n{}"
        let lines = Array(JSONLines(Array(text.utf8)))
        #expect(lines.map(\.number) == [2, 5, 6])
        #expect(try lines.map { try $0.result.get() } == [.array([1]), "x", .object([])])
    }

    @Test("every kind of damage on its line, with line and column in the file")
    func damagedLines() {
        let text = """
            {"ok":true}
            {"cut":"short
            {"ok":true} trailing
            [1,2,]
            \u{1}
            {"ok":true}
            """
        let lines = Array(JSONLines(text))
        let summary = lines.map { line -> String in
            switch line.result {
            case .success: "\(line.number): ok"
            case .failure(let error): "\(error.line):\(error.column): \(error.reason)"
            }
        }
        #expect(
            summary == [
                "1: ok",
                "2:8: unterminated string",
                "3:13: trailing characters after the value",
                "4:6: trailing comma before ']'",
                "5:1: expected a value, found U+0001",
                "6: ok",
            ])
    }

    @Test("nothing at all gives no lines")
    func empty() {
        #expect(Array(JSONLines("")).isEmpty)
        #expect(Array(JSONLines("\n\n  \n")).isEmpty)
    }
}
