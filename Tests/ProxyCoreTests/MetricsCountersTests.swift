import LogRecord
import ProxyCore
import Testing

/// The counters behind the metrics that a process test cannot easily drive: a log that cannot be
/// written, and every status class.
@Suite("metrics counters")
struct MetricsCountersTests {
    @Test("a log line write(2) refuses is counted, once per line")
    func logWriteErrors() throws {
        // /dev/full accepts the open and fails every write with ENOSPC: a full disk.
        let log = try LogWriter(path: "/dev/full")
        #expect(log.writeErrors == 0)
        log.write(line: "{\"a\":1}")
        log.write(line: Array("{\"b\":2}".utf8))
        #expect(log.writeErrors == 2)
    }

    @Test("a written line is no error")
    func logWritten() throws {
        let log = try LogWriter(path: "/dev/null")
        log.write(line: "{}")
        #expect(log.writeErrors == 0)
    }

    static let statuses: [(status: Int?, statusClass: String)] = [
        (nil, "none"), (100, "1xx"), (101, "1xx"), (200, "2xx"), (204, "2xx"), (304, "3xx"), (404, "4xx"), (499, "4xx"),
        (500, "5xx"), (599, "5xx"), (600, "other"), (99, "other"), (0, "other"),
    ]

    @Test("requests are classed by their status's first digit; none without a response", arguments: statuses)
    func statusClass(status: Int?, statusClass: String) {
        #expect(RequestClass(action: .allowed, status: status).statusClass == statusClass)
    }

    @Test("labelled counts add up per key, one lock for several keys")
    func labeledCounts() {
        let counts = LabeledCounts<String>()
        counts.add("a")
        counts.add(["a", "b"])
        counts.add("c", 5)
        #expect(counts.snapshot == ["a": 2, "b": 1, "c": 5])
    }
}
