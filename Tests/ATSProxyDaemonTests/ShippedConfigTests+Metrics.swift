import ArgumentParser
import Foundation
import ProxyCore
import Testing

@testable import ATSProxyDaemon

/// `config/grafana-dashboard.json` and `config/prometheus-scrape.yml` against what the daemon
/// really exports: a dashboard query naming a metric that does not exist draws an empty panel
/// without a word, so the names are checked here.
extension ShippedConfigTests {
    /// The sample names the daemon's exposition can hold, by family type (from its `# TYPE` lines):
    /// a histogram's samples are `_bucket`, `_sum` and `_count`.
    static func exportedSamples() throws -> (counters: Set<String>, gauges: Set<String>, histograms: Set<String>) {
        let configuration = try DaemonCommand.parse([
            "--config", path, "--policy", Repository.path("config/ats-defaults.plist"),
        ]).resolveConfiguration()
        let text = Daemon(configuration: configuration, resolveConfiguration: { configuration }).metricsText()
        var exported: (counters: Set<String>, gauges: Set<String>, histograms: Set<String>) = ([], [], [])
        for line in text.split(separator: "\n") where line.hasPrefix("# TYPE ") {
            let fields = line.split(separator: " ")
            let name = String(fields[2])
            switch fields[3] {
            case "counter": exported.counters.insert(name)
            case "gauge": exported.gauges.insert(name)
            case "histogram": exported.histograms.formUnion(["_bucket", "_sum", "_count"].map { name + $0 })
            default: Issue.record("unexpected type: \(line)")
            }
        }
        return exported
    }

    /// Every PromQL expression in the dashboard: the panels' targets and the template variables'.
    static func dashboardQueries(_ dashboard: [String: Any]) -> [String] {
        let panels = dashboard["panels"] as? [[String: Any]] ?? []
        let targets = panels.flatMap { $0["targets"] as? [[String: Any]] ?? [] }.compactMap { $0["expr"] as? String }
        let variables = (dashboard["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []
        return targets + variables.compactMap { $0["definition"] as? String }
    }

    @Test(
        "the Grafana dashboard is importable JSON over a ${DS_PROMETHEUS} input, charting exactly what the daemon exports"
    )
    func grafanaDashboard() throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: Repository.path("config/grafana-dashboard.json")))
        let dashboard = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let inputs = dashboard["__inputs"] as? [[String: Any]] ?? []
        #expect(
            inputs.contains { $0["name"] as? String == "DS_PROMETHEUS" && $0["pluginId"] as? String == "prometheus" })
        let panels = try #require(dashboard["panels"] as? [[String: Any]])
        #expect(panels.count >= 10)
        for panel in panels {
            let title = panel["title"] as? String ?? "?"
            #expect((panel["datasource"] as? [String: Any])?["uid"] as? String == "${DS_PROMETHEUS}", "\(title)")
            let targets = panel["targets"] as? [[String: Any]] ?? []
            #expect(!targets.isEmpty, "\(title) has no query")
            #expect(
                targets.allSatisfy { ($0["datasource"] as? [String: Any])?["uid"] as? String == "${DS_PROMETHEUS}" },
                "\(title)")
            #expect(panel["gridPos"] is [String: Any], "\(title)")
        }
        let ids = panels.compactMap { $0["id"] as? Int }
        #expect(Set(ids).count == panels.count, "panel ids repeat or are missing")

        let exported = try Self.exportedSamples()
        let all = exported.counters.union(exported.gauges).union(exported.histograms)
        let name = try Regex("atsproxy_[a-zA-Z0-9_:]*")
        // rate() and increase() only make sense over counters (a histogram's samples are counters).
        let rated = try Regex(#"(?:rate|increase)\((atsproxy_[a-zA-Z0-9_:]*)"#)
        var used: Set<String> = []
        for query in Self.dashboardQueries(dashboard) {
            for match in query.matches(of: name) {
                let metric = String(query[match.range])
                used.insert(metric)
                #expect(
                    all.contains(metric), "the dashboard queries \(metric), which the daemon does not export: \(query)")
            }
            for match in query.matches(of: rated) {
                let metric = String(query[match.range]).split(separator: "(").last.map(String.init) ?? ""
                #expect(!exported.gauges.contains(metric), "rate or increase over the gauge \(metric): \(query)")
            }
        }
        #expect(all.subtracting(used).isEmpty, "exported but charted nowhere: \(all.subtracting(used).sorted())")
    }

    @Test("the Prometheus scrape job reads /metrics on 127.0.0.1:8081 and shows the token variants")
    func prometheusScrapeJob() throws {
        let text = try String(contentsOfFile: Repository.path("config/prometheus-scrape.yml"), encoding: .utf8)
        let active = text.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("#") }
            .joined(separator: "\n")
        #expect(active.contains("scrape_configs:"))
        #expect(active.contains("job_name: atsproxy"))
        #expect(active.contains("metrics_path: /metrics"))
        #expect(active.contains(#"targets: ["127.0.0.1:8081"]"#))
        // The token by file or config key, never the flag's value (visible to every local user in ps).
        #expect(text.contains("web-token-file"))
        #expect(!text.contains("--web-token TOKEN"))
        #expect(text.contains("type: Bearer"))
        #expect(text.contains("token: [\"TOKEN\"]"))
        #expect(!text.contains("\t"), "YAML is indented with spaces")
    }
}
