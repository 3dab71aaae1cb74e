import ATSPolicy
import LogRecord
import Testing
import TextFormats
import TrafficReport

@testable import ProxyCore

/// The live view takes request lines as records (``RequestRecord/loggedRequest``), the report and
/// `har` read them back from the log (``LoggedRequest/init(json:)``): both ways must give the same
/// value, or the live view and the report would count different things.
@Suite("A request record as the live view takes it")
struct RequestRecordLoggedTests {
    static func record(_ change: (inout RequestRecord) -> Void) -> RequestRecord {
        var record = InterceptUnitTests.record(logHeaders: nil)
        change(&record)
        return record
    }

    static func records() throws -> [(String, RequestRecord)] {
        let (compliant, broken) = try ConnectionJudgeTests.verdicts()
        return [
            ("an HTTP/1.1 request", record { _ in }),
            (
                "HTTP/2 with gRPC's status, a failure and headers",
                record {
                    $0.httpVersion = "HTTP/2"
                    $0.streamID = 7
                    $0.grpcStatus = 5
                    $0.grpcMessage = "not found: ü"
                    $0.failure = .upstreamClosed
                    $0.upstreamError = "the origin reset the stream: CANCEL"
                    $0.requestHeaders = [(":method", "GET"), ("accept", "*/*")]
                    $0.responseHeaders = [(":status", "200"), ("set-cookie", "[redacted]")]
                    $0.contentType = "application/grpc"
                    $0.timeToFirstByteMilliseconds = 12
                    $0.durationMilliseconds = 40
                    $0.sendMilliseconds = 3
                    $0.requestBodyBytes = 5
                    $0.responseBodyBytes = 70_000
                    $0.reused = true
                }
            ),
            (
                "a compliant verdict with its group",
                record {
                    $0.connection.verdict = compliant
                    $0.connection.keyExchangeGroup = .x25519
                    $0.statusText = "OK"
                }
            ),
            (
                "a violation, reported",
                record {
                    $0.connection.verdict = broken
                    $0.connection.action = .blocked
                    $0.upgrade = "websocket"
                    $0.status = 101
                }
            ),
            (
                "a tls_stream line",
                record {
                    $0.kind = .tlsStream
                    $0.method = nil
                    $0.url = nil
                    $0.httpVersion = nil
                    $0.status = nil
                }
            ),
            (
                "an app's own User-Agent",
                record { $0.noteUserAgent("MyApp/1.4.2 CFNetwork/1568.100.1 Darwin/24.0.0") }
            ),
            (
                "the CONNECT's app, the request naming none",
                record {
                    $0.connection.app = AppAgent(userAgent: "Other%20App/9 CFNetwork/1494.0.7 Darwin/23.4.0")
                    $0.noteUserAgent(nil)
                }
            ),
            ("a browser", record { $0.noteUserAgent("Mozilla/5.0 (iPhone) Safari/604.1") }),
            ("a request refused before its head was read", record { $0.method = nil }),
            ("a request line without an HTTP version", record { $0.httpVersion = "" }),
            ("no host", record { $0.connection.host = "" }),
        ]
    }

    @Test("the record's value is the line's, read back; a line the reader refuses has none")
    func sameAsTheLine() throws {
        for (name, record) in try Self.records() {
            let read: LoggedRequest?
            do {
                read = try LoggedRequest(json: JSONValue(parsing: record.logLine))
            } catch {
                read = nil
            }
            #expect(record.loggedRequest == read, "\(name)")
        }
    }

    @Test("the verdict's fields follow the verdict and group set on the connection after it was made")
    func verdictFieldsFollowTheVerdict() throws {
        let (compliant, broken) = try ConnectionJudgeTests.verdicts()
        var record = Self.record { _ in }
        #expect(try JSONValue(parsing: record.logLine)["rule"] == .null)
        record.connection.verdict = broken
        record.connection.keyExchangeGroup = .x25519
        let line = try JSONValue(parsing: record.logLine)
        #expect(line["violations"] == .strings(broken.violations.map(\.kind.name)))
        #expect(line["violations"] != .strings([]))
        #expect(line["rule"] == broken.requirements.rule.json && line["error"] == broken.error?.json)
        #expect(line["tls_group"] == KeyExchangeGroup.x25519.json)
        #expect(record.json == line)
        record.connection.verdict = compliant
        #expect(try JSONValue(parsing: record.logLine)["violations"] == .strings([]))
        #expect(record.loggedRequest?.violations == .strings([]))
    }

    @Test("the table holds both kinds of row, so the comparison can fail either way")
    func tableHasBoth() throws {
        let rows = try Self.records()
        #expect(rows.contains { $0.1.loggedRequest == nil })
        #expect(rows.filter { $0.1.loggedRequest != nil }.count >= 5)
    }
}
