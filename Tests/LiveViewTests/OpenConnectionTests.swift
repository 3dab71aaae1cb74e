import ATSPolicy
import Foundation
import ProxyWire
import Testing
import TrafficReport

@testable import LiveView

/// Tunnels still open (`connection_open` lines, which the daemon feeds the view but never logs):
/// shown in the table from their verdict on, counted once when their connection line comes, and
/// never in the plist panel, which stays what `report` makes of the log.
@Suite struct OpenConnectionTests {
    static func opened(_ host: String, id: Int, violations: [String] = [], explanations: [String] = []) -> String {
        connectionLine(host, id: id, violations: violations, explanations: explanations)
            .replacingOccurrences(of: "\"kind\":\"connection\"", with: "\"kind\":\"connection_open\"")
    }

    @Test("an open tunnel shows in the table at once, with its verdict and violations; the plist panel leaves it out")
    func shownWhileOpen() throws {
        let open = Self.opened(
            "slow.example", id: 7, violations: ["tls_version"], explanations: ["the server negotiated TLS 1.1"])
        #expect(open.contains("connection_open"))
        let site = liveSite([connectionLine("done.example", id: 1), open])
        #expect(listedHosts(site.page("/")).sorted() == ["done.example", "slow.example"])
        let snapshot = site.snapshot
        let row = try #require(snapshot.rows.first { $0.name == "slow.example" })
        #expect(row.traffic.connections == 1)
        #expect(row.violations.map(\.name) == ["tls_version"])
        #expect(
            snapshot.infoPlistFragment
                == batchReport([connectionLine("done.example", id: 1)], context: context()).report.infoPlistFragment)
        #expect(!snapshot.infoPlistFragment.contains("slow.example"))
        #expect(site.traffic.lines == 1)
        #expect(site.page("/").contains("1 tunnel open"))
    }

    @Test("its connection line replaces it: one connection counted, and the panel then includes it")
    func replacedByItsLine() throws {
        let final = connectionLine(
            "slow.example", id: 7, violations: ["tls_version"], explanations: ["the server negotiated TLS 1.1"])
        let site = liveSite([Self.opened("slow.example", id: 7, violations: ["tls_version"]), final])
        #expect(site.traffic.openConnectionRecords.isEmpty)
        let row = try #require(site.snapshot.rows.first { $0.name == "slow.example" })
        #expect(row.traffic.connections == 1)
        #expect(site.snapshot.infoPlistFragment == batchReport([final], context: context()).report.infoPlistFragment)
    }

    @Test("open tunnels are bounded: past the limit the oldest is forgotten and counted")
    func bounded() {
        var limits = LiveTraffic.Limits()
        limits.openConnections = 3
        let site = liveSite((1...5).map { Self.opened("h\($0).example", id: $0) }, limits: limits)
        #expect(site.traffic.openConnectionRecords.count == 3)
        #expect(Set(site.traffic.openConnectionRecords.keys) == [3, 4, 5])
        #expect(site.traffic.forgottenOpenConnections == 2)
    }
}

/// The batch scan that spares parsing the open lines of connections that ended in the same batch.
@Suite struct LineBatchTests {
    static func bytes(_ line: String) -> [UInt8] { Array(line.utf8) }

    @Test("open lines of connections ended in the batch are skipped; others, and every other line, are kept in order")
    func skipsOnlyWhatEnded() {
        let lines = [
            OpenConnectionTests.opened("a.example", id: 1), OpenConnectionTests.opened("b.example", id: 2),
            requestLine("a.example", id: 1), connectionLine("a.example", id: 1),
        ].map(Self.bytes)
        let kept = LineBatch.worthParsing(lines.map(LoggedEntry.line)).map { entry in
            guard case .line(let line) = entry else { return [UInt8]() }
            return line
        }
        #expect(kept == [lines[1], lines[2], lines[3]])
    }

    @Test("a batch fed whole gives the same view as its lines one by one")
    func sameView() {
        let lines = [
            OpenConnectionTests.opened("a.example", id: 1), connectionLine("a.example", id: 1),
            OpenConnectionTests.opened("b.example", id: 2, violations: ["tls_version"]),
        ]
        let one = liveSite(lines)
        let batch = LiveViewSite(context: context())
        batch.ingest(lines: lines.map(Self.bytes))
        #expect(batch.snapshot.rows.map(\.name) == one.snapshot.rows.map(\.name))
        #expect(batch.snapshot.rows.map(\.traffic.connections) == one.snapshot.rows.map(\.traffic.connections))
        #expect(batch.traffic.openConnectionRecords.keys.sorted() == [2])
    }

    @Test(
        "connection ids are read after the writer's markers only",
        arguments: [
            (#"{"kind":"connection_open","connection_id":42,"x":1}"#, true, Int64?.some(42)),
            (#"{"kind":"connection","connection_id":7}"#, false, Int64?.some(7)),
            (#"{"kind":"connection","connection_id":null}"#, false, Int64?.none),
            (#"{"connection_id":7,"kind":"connection"}"#, false, Int64?.none),
        ])
    func ids(line: String, open: Bool, expected: Int64?) {
        let marker =
            open
            ? Array(#""kind":"connection_open","connection_id":"#.utf8)
            : Array(#""kind":"connection","connection_id":"#.utf8)
        #expect(LineBatch.connectionID(in: Array(line.utf8), after: marker) == expected)
    }
}
