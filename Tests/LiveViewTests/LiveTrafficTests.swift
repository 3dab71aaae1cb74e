import ATSPolicy
import Testing
import TrafficReport

@testable import LiveView

@Suite("LiveTraffic: the daemon's lines in bounded memory")
struct LiveTrafficTests {
    @Test("request lines before their connection's line join it and count for its host, as report counts them")
    func requestsBeforeTheirConnection() throws {
        let site = liveSite(RecordedLines.intercept)
        let batch = batchReport(RecordedLines.intercept, context: site.context)
        let api = try HostIdentity(parsing: "api.example.com")
        #expect(site.traffic.tally[api]?.requests == 2)
        #expect(
            site.traffic.tally.hosts.map { "\($0.host) \($0.connections) \($0.requests)" }
                == batch.collection.hostTraffic.map { "\($0.host) \($0.connections) \($0.requests)" })
        let joined = try #require(site.traffic.recentConnections.first { $0.connectionID == 17 })
        #expect(joined.isComplete)
        #expect(joined.requests.map(\.method) == ["GET", "POST"])
        // Connection 20's line is cut off (the fixture's last line): its request waits, open. (Its
        // second request line has no url, which a request record requires: refused, like the torn line.)
        let open = try #require(site.traffic.recentConnections.first { $0.connectionID == 20 })
        #expect(!open.isComplete)
        #expect(open.requests.map(\.url) == ["https://ws.example.com/socket?token=a%2Fb%3Dc"])
        #expect(site.traffic.unparsedLines == 2)
        #expect(
            site.traffic.activity[api]?.lastSeen == "2026-11-24T15:04:06.500Z", "the requests' times count as sightings"
        )
    }

    @Test("the same lines in any order give the same hosts", arguments: [false, true])
    func orderDoesNotMatter(reversed: Bool) {
        let lines = [
            requestLine("api.example.com", id: 1), requestLine("api.example.com", id: 1),
            connectionLine("api.example.com", id: 1),
            requestLine("cdn.example.com", id: 2), connectionLine("cdn.example.com", id: 2),
            requestLine("alone.example.com", id: 3),
        ]
        let forward = liveSite(lines).traffic.tally.hosts.map { "\($0.host) c\($0.connections) r\($0.requests)" }
            .sorted()
        let backward = liveSite(reversed ? lines.reversed() : lines).traffic.tally.hosts.map {
            "\($0.host) c\($0.connections) r\($0.requests)"
        }.sorted()
        #expect(forward == ["api.example.com c1 r2", "cdn.example.com c1 r1"])
        #expect(backward == forward)
    }

    @Test("the ring keeps the most recent connections and counts the ones it forgot")
    func ringIsBounded() {
        let limits = LiveTraffic.Limits(recentConnections: 3, hosts: 100, clientsPerHost: 4, requestsPerConnection: 2)
        var traffic = LiveTraffic(limits: limits)
        for index in 0..<10 {
            for _ in 0..<3 { traffic.ingest(line: Array(requestLine("h\(index).example.com", id: index).utf8)) }
            traffic.ingest(line: Array(connectionLine("h\(index).example.com", id: index).utf8))
        }
        #expect(traffic.recentConnections.map(\.connectionID) == [9, 8, 7])
        #expect(traffic.recentConnections.allSatisfy { $0.requests.count == 2 && $0.droppedRequests == 1 })
        #expect(traffic.evictedConnections == 7)
        #expect(traffic.openConnections == 0)
        #expect(traffic.tally.hosts.count == 10, "the tally is not the ring: every host still counts")
    }

    @Test("open connections pushed out of the ring stop waiting for their line")
    func evictedOpenConnections() {
        var traffic = LiveTraffic(limits: .init(recentConnections: 2))
        for id in 0..<5 { traffic.ingest(line: Array(requestLine("a.example.com", id: id).utf8)) }
        #expect(traffic.openConnections == 2)
        traffic.ingest(line: Array(connectionLine("a.example.com", id: 0).utf8))
        #expect(
            traffic.recentConnections.first?.requests.isEmpty == true, "connection 0's requests were forgotten with it")
        #expect(traffic.openConnections == 1, "connection 0's own line pushed connection 3 out")
        #expect(traffic.recentConnections.map(\.connectionID) == [0, 4])
    }

    @Test("hosts beyond the limit are counted as dropped; devices per host are capped")
    func hostsAndClientsAreBounded() {
        let limits = LiveTraffic.Limits(recentConnections: 10, hosts: 2, clientsPerHost: 3, requestsPerConnection: 5)
        var traffic = LiveTraffic(limits: limits)
        for index in 0..<20 {
            traffic.ingest(
                line: Array(connectionLine("h\(index % 4).example.com", client: "10.0.0.\(index):4000").utf8))
            traffic.ingest(line: Array(requestLine("w\(index).example.com", id: 100 + index).utf8))
        }
        #expect(traffic.tally.hosts.map(\.host.description) == ["h0.example.com", "h1.example.com"])
        #expect(traffic.tally.droppedLines == 10)
        #expect(traffic.tally.droppedRequests == 18, "two waiting hosts fit under the limit")
        #expect(traffic.activity.count == 2)
        let h0 = traffic.activity[.name("h0.example.com")]
        #expect(h0?.clients == ["10.0.0.0", "10.0.0.4", "10.0.0.8"])
        #expect(h0?.moreClients == true)
        #expect(traffic.recentConnections.count == 10)
    }

    @Test(
        "lines that are not records are counted, not fatal",
        arguments: [
            "not json", #"{"ts":"2026-11-24T15:00:00Z","host":"a.example.com","scheme":"https","action":"allowed""#,
            #"{"kind":"stats","uptime":3}"#, "[1,2,3]", #"{"kind":"connection","scheme":"https","action":"allowed"}"#,
            #"{"kind":"request","ts":"yesterday","connection_id":1,"host":"a.example.com"}"#,
        ])
    func unparsedLines(line: String) {
        var traffic = LiveTraffic()
        traffic.ingest(line: Array(line.utf8))
        #expect(traffic.unparsedLines == 1)
        #expect(traffic.lastUnparsedReason != nil)
        #expect(traffic.lines == 1)
        #expect(traffic.tally.hosts.isEmpty)
    }

    @Test("every line ingested raises the version; empty lines are no lines")
    func versionIncreases() {
        var traffic = LiveTraffic()
        var versions = [traffic.version]
        for line in RecordedLines.reportDay + ["garbage"] {
            traffic.ingest(line: Array(line.utf8))
            versions.append(traffic.version)
        }
        #expect(zip(versions, versions.dropFirst()).allSatisfy { $0 < $1 })
        let before = traffic.version
        traffic.ingest(line: Array("\n".utf8))
        traffic.ingest(line: [])
        #expect(traffic.version == before)
    }

    @Test(
        "a device is an address: the port is dropped, IPv6 brackets too",
        arguments: [
            ("192.168.1.23:50312", "192.168.1.23"), ("[2001:db8::1]:443", "2001:db8::1"),
            ("2001:db8::1", "2001:db8::1"), ("host", "host"),
        ])
    func clientAddresses(client: String, address: String) {
        #expect(HostActivity.address(client) == address)
    }
}
