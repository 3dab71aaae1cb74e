import ATSPolicy
import Testing
import TextFormats
import TrafficReport

/// The incremental tally gives what the batch `hostTraffic` gives, whatever the order of the lines.
@Suite struct HostTrafficTallyTests {
    static let lines = [
        logLine("api.example.com", version: "TLSv1.3", cipher: tls13),
        logLine("legacy.example.com", version: "TLSv1.0", cipher: ecdheCBC, violations: ["tls_version"]),
        logLine(
            "shared.example.com", version: "TLSv1.2", cipher: ecdheGCM,
            sniCheck: ("assets.example.com", ["tls_version"], ["the server negotiated TLS 1.1"])),
        logLine("tracker.example.io", scheme: "http", violations: ["cleartext"]),
        logLine("-", method: "-"),
        requestLine("api.example.com", id: 1),
        requestLine("api.example.com", id: 1),
        requestLine("orphan.example.com", id: 9),
        requestLine("legacy.example.com", id: 2, kind: "tls_stream"),
    ]

    /// One line of each kind, parsed as the collection parses it.
    enum Parsed {
        case connection(LoggedConnection)
        case request(LoggedRequest)
    }

    static func parse(_ line: String) throws -> Parsed {
        let value = try JSONValue(parsing: line)
        if LoggedRequest.kind(of: value) == "connection" { return .connection(try LoggedConnection(json: value)) }
        return .request(try LoggedRequest(json: value))
    }

    static func summary(_ hosts: [HostTraffic]) -> [String] {
        hosts.map {
            "\($0.host) c\($0.connections) r\($0.requests) a\($0.allowed) s\($0.asServerName) \($0.violationNames)"
        }
    }

    static func batch(_ lines: [String]) -> [HostTraffic] {
        var collection = LogCollection()
        collection.add(LogFile(path: "t.log", contents: Array((lines.joined(separator: "\n") + "\n").utf8)))
        return collection.hostTraffic
    }

    @Test(arguments: [false, true])
    func requestsBeforeOrAfterTheirConnectionCountTheSame(requestsFirst: Bool) throws {
        let connections = Self.lines.filter { !$0.contains("\"kind\"") }
        let requests = Self.lines.filter { $0.contains("\"kind\"") }
        var tally = HostTrafficTally()
        for line in requestsFirst ? requests + connections : connections + requests {
            switch try Self.parse(line) {
            case .connection(let record): tally.add(record)
            case .request(let request): tally.add(request)
            }
        }
        #expect(Self.summary(tally.hosts) == Self.summary(Self.batch(Self.lines)))
        #expect(tally[try HostIdentity(parsing: "api.example.com")]?.requests == 2)
        #expect(tally[try HostIdentity(parsing: "orphan.example.com")] == nil)
    }

    @Test func hostsBeyondTheCapAreCountedAsDropped() throws {
        var tally = HostTrafficTally(maximumHosts: 2)
        for host in ["a.example.com", "b.example.com", "c.example.com", "a.example.com", "d.example.com"] {
            guard case .connection(let record) = try Self.parse(logLine(host)) else { continue }
            tally.add(record)
        }
        guard case .request(let request) = try Self.parse(requestLine("e.example.com", id: 3)) else { return }
        tally.add(request)
        tally.add(request)
        #expect(tally.hosts.map(\.host.description) == ["a.example.com", "b.example.com"])
        #expect(tally.hosts[0].connections == 2)
        #expect(tally.droppedLines == 2)
        #expect(tally.droppedRequests == 0, "one waiting host fits under the cap")
        guard case .request(let other) = try Self.parse(requestLine("f.example.com", id: 4)) else { return }
        tally.add(other)
        guard case .request(let third) = try Self.parse(requestLine("g.example.com", id: 5)) else { return }
        tally.add(third)
        #expect(tally.droppedRequests == 1)
        // A connection line for a waiting host beyond the cap drops its waiting requests too.
        guard case .connection(let late) = try Self.parse(logLine("e.example.com")) else { return }
        tally.add(late)
        #expect(tally.droppedRequests == 3)
        #expect(tally.droppedLines == 3)
    }
}

/// A request line of intercept mode with the fields `LoggedRequest` requires.
func requestLine(_ host: String, id: Int, kind: String = "request") -> String {
    """
    {"ts":"2026-11-20T10:00:01.000Z","kind":"\(kind)","connection_id":\(id),"client":"127.0.0.1:5000","host":"\(host)",\
    "port":443,"method":"GET","url":"https://\(host)/","http_version":"HTTP/1.1","status":200,"send_ms":0,"duration_ms":3}
    """
}
