import LogRecord
import Testing
import TextFormats
import TrafficReport

/// `failure`, the code beside `upstream_error`: read when a line has it, and for lines written
/// before it existed (last week's logs) `report` still tells a non-proxy request by its sentence.
@Suite("Reading a line's failure code")
struct FailureFieldTests {
    static let head =
        #"{"ts":"2026-11-21T15:25:30.878Z","client":"127.0.0.1:1","method":"GET","scheme":"http","host":"a.example","port":80,"action":"failed""#

    @Test(
        "the code decides, the sentence only without it",
        arguments: [
            // New lines: the code, whatever the sentence says.
            (
                #","upstream_error":"not a proxy request: GET /","failure":"not_a_proxy_request"}"#,
                Failure?.some(.notAProxyRequest), false
            ),
            (#","upstream_error":"reworded: GET /","failure":"not_a_proxy_request"}"#, .notAProxyRequest, false),
            (#","upstream_error":"cannot connect","failure":"connect_failed"}"#, .connectFailed, true),
            (#","upstream_error":null,"failure":null}"#, nil, true),
            // A code this reader does not know (a later daemon's) is no code, and no error.
            (#","upstream_error":"something new","failure":"some_later_code"}"#, nil, true),
            // Old lines, without the field: the sentence.
            (#","upstream_error":"not a proxy request: GET /"}"#, nil, false),
            (#","upstream_error":"cannot connect"}"#, nil, true),
        ])
    func failure(tail: String, failure: Failure?, isLoad: Bool) throws {
        let record = try LoggedConnection(json: try JSONValue(parsing: Self.head + tail))
        #expect(record.failure == failure)
        #expect(record.isLoad == isLoad)
    }
}
