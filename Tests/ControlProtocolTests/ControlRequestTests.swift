import ControlProtocol
import Foundation
import Testing

/// The daemon's reading of a control request line, as bytes arrive.
@Suite("control request line")
struct ControlRequestTests {
    @Test(
        "what the bytes so far ask for",
        arguments: [
            ("status\n", ControlRequest.command(.status)),
            ("flush-cache\n", .command(.flushCache)),
            // A client that sends CRLF, or pads the name, still names the command.
            ("reload\r\n", .command(.reload)),
            (" \tstats \r\n", .command(.stats)),
            // Only the first line counts.
            ("metrics\nreload\n", .command(.metrics)),
            ("stat\n", .unknown("stat")),
            ("STATUS\n", .unknown("STATUS")),
            ("\n", .unknown("")),
            ("status", .incomplete),
            ("", .incomplete),
            (String(repeating: "s", count: 256), .incomplete),
            (String(repeating: "s", count: 257), .tooLong),
            (String(repeating: " ", count: 255) + "stats\n", .tooLong),
            (String(repeating: " ", count: 250) + "stats\n", .command(.stats)),
        ])
    func parse(_ text: String, _ expected: ControlRequest) {
        #expect(ControlRequest(parsing: Array(text.utf8)) == expected)
    }

    @Test("fuzz-control's dictionary names every command, so a new one is fuzzed as a token too")
    func dictionary() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("Fuzz/Dictionaries/control.dict").path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let tokens = Set(
            text.split(separator: "\n").filter { $0.hasPrefix("\"") }.map { String($0.dropFirst().dropLast()) })
        let missing = ControlCommand.allCases.map(\.rawValue).filter { !tokens.contains($0) }
        #expect(missing.isEmpty, "add to Fuzz/Dictionaries/control.dict: \(missing)")
    }
}
