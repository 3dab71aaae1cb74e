import ATSProxyCtl
import ControlProtocol
import Foundation
import TLSTestSupport
import Testing

/// The real daemon's metrics, after real traffic, read through the control socket (`atsproxyctl
/// metrics`) and parsed by the Prometheus client library's own parser: every counter moved by
/// exactly what was sent.
@Suite("atsproxy's Prometheus metrics", .startsProcesses(timeLimit: .seconds(60)))
struct MetricsProcessTests {
    @Test("an allowed, a blocked and a cached tunnel, and a reload, counted exactly; the histogram is well formed")
    func tunnelTraffic() throws {
        let factory = try CertificateFactory()
        defer { withExtendedLifetime(factory) {} }
        try factory.rootCA("root")
        let named = { (host: String) in ["subjectAltName=DNS:\(host)", "extendedKeyUsage=serverAuth"] }
        try factory.certificate("leaf", issuer: "root", extensions: named("secure.test"))
        // A leaf signed with SHA-1: ATS refuses it (sig_hash_leaf) after a handshake that completes
        // (security level 0, or s_server refuses to load it).
        try factory.certificate("weak", issuer: "root", digest: "sha1", extensions: named("weak.test"))
        let secure = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let weak = try TestTLSServer(
            directory: factory.directory, ["-cert", "weak.pem", "-key", "weak.key", "-cipher", "ALL:@SECLEVEL=0"])
        let hosts = try writeHostsFile(in: factory.directory, ["secure.test", "weak.test"])
        let startedBefore = Date().timeIntervalSince1970.rounded(.down)
        let daemon = try DaemonProcess(
            directory: factory.directory,
            [
                "--listen", "127.0.0.1:0", "--hosts-file", hosts, "--ca-file", factory.path("root.pem"),
                "--system-roots", "off",
                "--threads", "2", "--verdict-cache-size", "500",
            ])
        let startedAfter = Date().timeIntervalSince1970.rounded(.up)

        let trust = ["--cacert", factory.path("root.pem")]
        #expect(try curlStatus(proxyPort: daemon.port, "https://secure.test:\(secure.port)/", trust).code == 200)
        #expect(try curlStatus(proxyPort: daemon.port, "https://weak.test:\(weak.port)/", trust).code == 0)
        // The same host again: the verdict comes from the cache, no probe.
        #expect(try curlStatus(proxyPort: daemon.port, "https://secure.test:\(secure.port)/", trust).code == 200)
        let lines = daemon.logLines(atLeast: 3)
        #expect(lines.map { $0["action"] as? String } == ["allowed", "blocked", "allowed"])
        #expect(lines[1]["violations"] as? [String] == ["sig_hash_leaf"], "\(lines[1])")
        // Nothing changed in the files: the reload is read, accepted, and changes nothing.
        #expect(atsproxyctl("reload", "--socket", daemon.controlSocket).exitCode == 0)

        var scrape = try PrometheusScrape(socket: daemon.controlSocket)
        // The counters follow the log line, and a session's close follows its last byte: wait for both.
        _ = eventually {
            scrape = (try? PrometheusScrape(socket: daemon.controlSocket)) ?? scrape
            return scrape.value("atsproxy_connections_open") == 0
                && scrape.value("atsproxy_connections_total", ["action": "allowed"]) == 2
        }
        let text = scrape.text

        #expect(
            scrape.value("atsproxy_info", ["mode": "enforce", "inspect": "tunnel", "version": ATSProxyVersion.current])
                == 1, "\(text)")
        let started = try #require(scrape.value("atsproxy_start_time_seconds"))
        #expect(
            started >= startedBefore && started <= startedAfter, "\(started) not in \(startedBefore)...\(startedAfter)")

        #expect(scrape.value("atsproxy_connections_accepted_total") == 3)
        #expect(scrape.value("atsproxy_connections_open") == 0)
        for (action, count) in ["allowed": 2.0, "blocked": 1, "failed": 0, "denied": 0] {
            #expect(scrape.value("atsproxy_connections_total", ["action": action]) == count, "\(action)")
        }
        #expect(
            scrape.samples("atsproxy_connection_violations_total").map(\.labels) == [["violation": "sig_hash_leaf"]],
            "\(text)")
        #expect(scrape.value("atsproxy_connection_violations_total", ["violation": "sig_hash_leaf"]) == 1)
        #expect(
            scrape.value("atsproxy_relayed_bytes_total", ["direction": "up"])
                == lines.reduce(0) { $0 + Double($1["bytes_up"] as? Int ?? 0) })
        #expect(
            scrape.value("atsproxy_relayed_bytes_total", ["direction": "down"])
                == lines.reduce(0) { $0 + Double($1["bytes_down"] as? Int ?? 0) })
        #expect((scrape.value("atsproxy_relayed_bytes_total", ["direction": "down"]) ?? 0) > 0)
        // Tunnel mode reads no HTTP: no request is counted.
        #expect(scrape.samples("atsproxy_requests_total").isEmpty)

        // Per loop: one sample each, summing to the totals.
        let open = scrape.samples("atsproxy_loop_connections_open")
        #expect(Set(open.map { $0.labels["loop"] ?? "" }) == ["0", "1"])
        #expect(open.reduce(0) { $0 + $1.value } == scrape.value("atsproxy_connections_open"))
        #expect(
            scrape.samples("atsproxy_loop_connections_served_total").reduce(0) { $0 + $1.value }
                == scrape.value("atsproxy_connections_accepted_total"))

        // Two probes (one per host), both completed handshakes; the third connection hit the cache.
        #expect(scrape.value("atsproxy_probes_started_total") == 2)
        #expect(scrape.value("atsproxy_probes_not_started_total") == 0)
        for (outcome, count) in [
            "completed": 2.0, "ats_refused": 0, "not_tls": 0, "destination_refused": 0, "unreachable": 0,
            "cancelled": 0,
        ] {
            #expect(scrape.value("atsproxy_probes_finished_total", ["outcome": outcome]) == count, "\(outcome)")
        }
        #expect(scrape.value("atsproxy_probe_handshakes_in_flight") == 0)
        try expectWellFormedHistogram(scrape, "atsproxy_probe_duration_seconds", count: 2)

        #expect(scrape.value("atsproxy_verdict_cache_entries") == 2)
        #expect(scrape.value("atsproxy_verdict_cache_capacity") == 500)
        #expect(scrape.value("atsproxy_verdict_cache_hits_total") == 1)
        #expect(scrape.value("atsproxy_verdict_cache_misses_total") == 2)
        #expect(scrape.value("atsproxy_verdict_cache_evictions_total") == 0)
        #expect(scrape.value("atsproxy_leaves_minted_total") == 0)

        for (result, count) in ["applied": 0.0, "unchanged": 1, "refused": 0] {
            #expect(scrape.value("atsproxy_reloads_total", ["result": result]) == count, "\(result)")
        }
        #expect(scrape.value("atsproxy_log_write_errors_total") == 0)

        // Every family has its HELP, and its name says what Prometheus expects of its type.
        for family in scrape.families {
            #expect(family.name.hasPrefix("atsproxy_"), "\(family.name)")
            #expect(!family.help.isEmpty, "\(family.name) has no HELP")
        }
        #expect(scrape.family(of: "atsproxy_connections_total")?.type == "counter")
        #expect(scrape.family(of: "atsproxy_probe_duration_seconds_bucket")?.type == "histogram")

        // atsproxyctl metrics prints the same text, nothing around it (but the resident memory,
        // which moves between any two reads).
        let printed = atsproxyctl("metrics", "--socket", daemon.controlSocket)
        #expect(printed.exitCode == 0, "\(printed.standardError)")
        let steady = { (text: String) in
            text.split(separator: "\n").filter { !$0.hasPrefix("atsproxy_resident_memory_bytes ") }
        }
        #expect(steady(printed.standardOutput) == steady(text))
        #expect(daemon.terminate() == 0)
    }

    @Test("intercept mode: requests by action and status class, leaves minted once and then reused")
    func interceptTraffic() throws {
        let host = "app.test"
        let fixture = try InterceptFixture(names: [host])
        try fixture.leaf("leaf", for: [host])
        let server = try TestTLSServer(directory: fixture.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let daemon = try fixture.daemon()
        // Three requests, each on its own connection (s_server -www answers HTTP/1.0 and closes):
        // one leaf minted, then reused twice from the loop's cache.
        let url = "https://\(host):\(server.port)/"
        let first = try fixture.curl(daemon, ["-o", "/dev/null", "-o", "/dev/null", "-w", "%{http_code} ", url, url])
        #expect(first.standardOutput == "200 200 ", "\(first.standardError)")
        let second = try fixture.curl(daemon, ["-o", "/dev/null", "-w", "%{http_code}", url])
        #expect(second.standardOutput == "200", "\(second.standardError)")

        var scrape = try PrometheusScrape(socket: daemon.controlSocket)
        _ = eventually {
            scrape = (try? PrometheusScrape(socket: daemon.controlSocket)) ?? scrape
            return scrape.value("atsproxy_connections_open") == 0
                && scrape.value("atsproxy_requests_total", ["status_class": "2xx"]) == 3
        }
        #expect(scrape.value("atsproxy_info", ["inspect": "intercept"]) == 1, "\(scrape.text)")
        #expect(
            scrape.samples("atsproxy_requests_total").map(\.labels) == [["action": "allowed", "status_class": "2xx"]],
            "\(scrape.text)")
        #expect(scrape.value("atsproxy_requests_total", ["action": "allowed", "status_class": "2xx"]) == 3)
        #expect(scrape.value("atsproxy_connections_total", ["action": "allowed"]) == 3)
        #expect(scrape.value("atsproxy_leaves_minted_total") == 1)
        #expect(scrape.value("atsproxy_leaf_cache_hits_total") == 2)
        // Intercept mode judges the proxy's own upstream handshake: no verdict probe runs, and the
        // histogram stays empty but whole.
        #expect(scrape.value("atsproxy_probes_started_total") == 0)
        try expectWellFormedHistogram(scrape, "atsproxy_probe_duration_seconds", count: 0)
        #expect(daemon.terminate() == 0)
    }

    /// Buckets ascending by `le`, cumulative counts never falling, `+Inf` equal to `_count`, a sum
    /// of durations that is positive (zero for no observation) and below the handshake timeout's.
    private func expectWellFormedHistogram(
        _ scrape: PrometheusScrape, _ name: String, count: Double, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let buckets = scrape.samples(name + "_bucket").map {
            (bound: Double($0.labels["le"] ?? "") ?? .nan, count: $0.value)
        }
        #expect(buckets.count == 12, "5 ms to 10 s and +Inf", sourceLocation: sourceLocation)
        #expect(buckets.first?.bound == 0.005 && buckets.dropLast().last?.bound == 10, sourceLocation: sourceLocation)
        #expect(buckets.last?.bound == .infinity, sourceLocation: sourceLocation)
        #expect(
            zip(buckets, buckets.dropFirst()).allSatisfy { $0.bound < $1.bound && $0.count <= $1.count },
            sourceLocation: sourceLocation)
        #expect(buckets.last?.count == count, sourceLocation: sourceLocation)
        #expect(scrape.value(name + "_count") == count, sourceLocation: sourceLocation)
        let sum = try #require(scrape.value(name + "_sum"), sourceLocation: sourceLocation)
        #expect(count == 0 ? sum == 0 : sum > 0 && sum < 10 * count, "\(sum)", sourceLocation: sourceLocation)
    }
}
