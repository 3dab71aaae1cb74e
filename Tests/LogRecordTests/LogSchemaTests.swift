import Foundation
import LogRecord
import Testing
import TextFormats

/// The schema against its contract: docs/log-format.md names every failure code, and the field
/// enums read what they write.
@Suite("The log's schema")
struct LogSchemaTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test("every failure code is documented in docs/log-format.md", arguments: Failure.allCases)
    func failureDocumented(_ failure: Failure) throws {
        let docs = try String(contentsOf: Self.repository.appending(path: "docs/log-format.md"), encoding: .utf8)
        // A row of the codes' table: the code in backticks at the start of a cell.
        #expect(docs.contains("| `\(failure.rawValue)` |"), "docs/log-format.md does not list \(failure.rawValue)")
    }

    @Test("field names are unique within each kind of line")
    func uniqueNames() {
        #expect(Set(ConnectionField.allCases.map(\.rawValue)).count == ConnectionField.allCases.count)
        #expect(Set(RequestField.allCases.map(\.rawValue)).count == RequestField.allCases.count)
    }

    @Test("a field enum writes and reads the same key")
    func roundTrip() throws {
        var builder = JSONObjectBuilder()
        builder.add(ConnectionField.upstreamError, string: "closed")
        builder.add(ConnectionField.failure, string: Failure.closedIdle.rawValue)
        let line = try JSONValue(parsing: builder.value.serialized)
        #expect(line["upstream_error"] == .string("closed"))
        #expect(line[ConnectionField.failure]?.stringValue.flatMap(Failure.init(rawValue:)) == .closedIdle)
        #expect(line[RequestField.url] == nil)
    }

    @Test(
        "the action and kind vocabularies",
        arguments: [
            (Action.allCases.map(\.rawValue), ["allowed", "blocked", "failed", "denied"]),
            (RecordKind.allCases.map(\.rawValue), ["connection", "connection_open", "request", "tls_stream"]),
        ])
    func vocabularies(_ names: [String], _ expected: [String]) {
        #expect(names == expected)
    }
}
