import ATSPolicy
import Foundation
import LogRecord
import TLSTestSupport
import Testing
import TextFormats
import TrafficReport

@Suite("Reading the proxy's logs: gzip, damaged lines, records", .startsProcesses(timeLimit: .seconds(60)))
struct LogReadingTests {
    static let two =
        logLine("a.example.com", version: "TLSv1.3", cipher: tls13) + "\n"
        + logLine("b.example.com", version: "TLSv1.0", cipher: ecdheCBC) + "\n"

    @Test("a gzip file reads as its text; plain text is left as it is")
    func gzipAndPlain() throws {
        let compressed = LogFile(path: "x.gz", contents: try gzipped(Self.two))
        #expect(compressed.wasCompressed)
        #expect(compressed.damage == nil)
        #expect(compressed.bytes == Array(Self.two.utf8))
        let plain = LogFile(path: "x", contents: Array(Self.two.utf8))
        #expect(!plain.wasCompressed)
        #expect(plain.bytes == Array(Self.two.utf8))
    }

    @Test("concatenated gzip members read as one text, as gzip -d reads them")
    func multiMember() throws {
        let first = logLine("a.example.com", version: "TLSv1.3", cipher: tls13) + "\n"
        let second = logLine("b.example.com", version: "TLSv1.2", cipher: ecdheGCM) + "\n"
        let file = LogFile(path: "x.gz", contents: try gzipped(first) + gzipped(second))
        #expect(file.damage == nil)
        #expect(String(decoding: file.bytes, as: UTF8.self) == first + second)
    }

    @Test("a truncated gzip file keeps the lines before the cut and says what happened")
    func truncatedGzip() throws {
        let many =
            (0..<200).map { logLine("h\($0).example.com", version: "TLSv1.3", cipher: tls13) }.joined(separator: "\n")
            + "\n"
        let whole = try gzipped(many)
        let file = LogFile(path: "x.gz", contents: Array(whole.prefix(whole.count / 2)))
        #expect(file.damage == "the compressed data ends early (the file is truncated)")
        #expect(!file.bytes.isEmpty)
        #expect(many.utf8.starts(with: file.bytes))
        var collection = LogCollection()
        collection.add(file)
        #expect(collection.records.count > 10)
        // The last, cut line is the only one skipped.
        #expect(collection.skipped.count <= 1)
    }

    @Test("bytes after a gzip member that are not gzip are reported")
    func trailingGarbage() throws {
        let file = LogFile(path: "x.gz", contents: try gzipped(Self.two) + Array("not gzip".utf8))
        #expect(file.damage == "8 bytes after the end of the compressed data are not gzip")
        #expect(file.bytes == Array(Self.two.utf8))
    }

    @Test("a torn last line and a JSON line that is no record are skipped with file, line and column")
    func skippedLines() {
        let text =
            logLine("a.example.com", version: "TLSv1.3", cipher: tls13) + "\n\n" + #"{"ts":"x","host":"b"}"# + "\n"
            + #"{"ts":"2026-11-20","host":"api.exam"#
        var collection = LogCollection()
        collection.add(LogFile(path: "atsproxy.log", contents: Array(text.utf8)))
        #expect(collection.records.count == 1)
        #expect(
            collection.skipped.map(\.description) == [
                "atsproxy.log:3: not a connection record: no \"scheme\" field",
                "atsproxy.log:4:27: unterminated string",
            ])
    }

    @Test(
        "record fields: wrong scheme or action, not an object",
        arguments: [
            (#"[1]"#, "not a connection record: the line is not a JSON object"),
            (
                #"{"host":"a","scheme":"ftp","action":"allowed"}"#,
                "not a connection record: \"scheme\" is \"ftp\", not https or http"
            ),
            (
                #"{"host":"a","scheme":"https","action":"dropped"}"#,
                "not a connection record: \"action\" is \"dropped\", not allowed, blocked, failed or denied"
            ),
            (
                #"{"host":"","scheme":"https","action":"allowed"}"#,
                "not a connection record: \"host\" is not a non-empty string"
            ),
            (
                #"{"host":"a","scheme":"https","action":"allowed","violations":"x"}"#,
                "not a connection record: \"violations\" is not an array"
            ),
        ])
    func recordErrors(line: String, message: String) throws {
        let value = try JSONValue(parsing: line)
        #expect(throws: LogRecordError.self) { try LoggedConnection(json: value) }
        do {
            _ = try LoggedConnection(json: value)
        } catch {
            #expect(error.description == message)
        }
    }

    @Test("denied lines are read, and are no ATS traffic: no host, no counts, no suggested entry")
    func deniedLines() throws {
        let denied = logLine("internal.test", scheme: "http", action: "denied", violations: ["cleartext"])
        let record = try LoggedConnection(json: try JSONValue(parsing: denied))
        #expect(record.action == .denied)
        #expect(!record.isLoad)
        let traffic = report([denied, logLine("api.example.com", scheme: "http", violations: ["cleartext"])])
        #expect(traffic.assessments.map(\.host.description) == ["api.example.com"])
        #expect(traffic.entries.map(\.domain) == ["api.example.com"])
        #expect(report([denied]).entries.isEmpty)
    }

    @Test("an SNI check's violations and explanations are split from the request host's")
    func serverNameSplit() throws {
        let line = logLine(
            "shared.example.com", action: "blocked", version: "TLSv1.2", cipher: ecdheGCM, violations: ["expired"],
            explanations: ["the leaf expired"],
            sniCheck: (
                "assets.example.com", ["tls_version"], ["the server negotiated TLS 1.1; ATS requires TLS 1.2 or later"]
            ))
        let record = try LoggedConnection(json: JSONValue(parsing: line))
        #expect(record.violations == ["expired"])
        #expect(record.explanations == ["the leaf expired"])
        #expect(record.serverNameCheck?.host == "assets.example.com")
        #expect(record.serverNameCheck?.violations == ["tls_version"])
        #expect(
            record.serverNameCheck?.explanations == ["the server negotiated TLS 1.1; ATS requires TLS 1.2 or later"])
    }

    @Test("a tunnel whose ClientHello could not be read is read, counted for its host, and changes no need")
    func unreadableHello() throws {
        let plain = logLine("api.example.com", version: "TLSv1.3", cipher: tls13)
        let reason = #"malformed ClientHello: the SNI "a b" is not a host name: it contains 0x20 (' ')"#
        guard case .object(var fields) = try JSONValue(parsing: plain) else { throw LogRecordError("not an object") }
        fields = fields.map { $0.0 == "action" ? ($0.0, .string("blocked")) : $0 }
        fields = fields.map { $0.0 == "compliant" ? ($0.0, .bool(false)) : $0 }
        fields.append(("hello_unreadable", .string(reason)))
        let unreadable = JSONValue.object(fields).serialized
        let record = try LoggedConnection(json: JSONValue(parsing: unreadable))
        #expect(record.helloUnreadable == reason)
        #expect(record.action == .blocked)
        let traffic = try #require(report([plain, unreadable]).assessments.first)
        #expect(traffic.traffic.unreadableHellos == 1)
        #expect(traffic.traffic.firstUnreadableHello == reason)
        #expect(traffic.traffic.blocked == 1)
        #expect(traffic.disposition == .compliant)
    }

    @Test("a missing file and a directory are errors naming them")
    func unreadableFiles() {
        #expect(throws: LogFileError(path: "/nonexistent/atsproxy.log", reason: "no such file")) {
            try LogCollection.read(paths: ["/nonexistent/atsproxy.log"])
        }
        #expect(throws: LogFileError(path: "/tmp", reason: "is a directory, not a log file")) {
            try LogCollection.read(paths: ["/tmp"])
        }
    }
}
