import ATSPolicy
import ControlProtocol
import LogRecord
import ProxyCore
import TLSInspection
import TextFormats

/// `GET /metrics` and the control socket's `metrics`: every counter and gauge the daemon keeps, in
/// Prometheus's text format. Runs on the main thread, like `status`: it reads the loops' shared
/// counters (atomics and short locks) and never waits for a loop.
extension Daemon {
    /// The exposition, format 0.0.4 (serve it as ``PrometheusText/contentType``). Every family is
    /// always present, zero when nothing happened, so a dashboard's queries never find a hole;
    /// label sets that grow with traffic (violations, request classes) list those seen.
    func metricsText() -> String {
        var text = PrometheusText()
        writeProcess(to: &text)
        writeConnections(to: &text)
        writeRequests(to: &text)
        writeFailures(to: &text)
        writeProbes(to: &text)
        writeVerdictCache(to: &text)
        writeLeaves(to: &text)
        text.counter(
            "atsproxy_reloads_total",
            help: "Reloads (SIGHUP or the control socket), by result: applied, unchanged, refused.",
            ReloadResult.allCases.map { (["result": $0.rawValue], reloads[$0] ?? 0) })
        text.counter(
            "atsproxy_log_write_errors_total",
            help: "Log lines lost because write(2) failed (a full disk, a closed output).",
            log.writeErrors)
        text.counter(
            "atsproxy_web_token_failures_total",
            help: "Requests to the web listener that gave a wrong web token (query, cookie or bearer header).",
            web?.tokenGuard.wrongTokens ?? 0)
        text.counter(
            "atsproxy_web_token_slowed_total",
            help:
                "Web listener requests answered 429 without a look at their token: their address gave too many wrong ones.",
            web?.tokenGuard.slowed ?? 0)
        text.gauge(
            "atsproxy_resident_memory_bytes", help: "The daemon's resident memory (VmRSS).",
            Double(ResidentMemory.bytes()))
        text.counter(
            "atsproxy_memory_trims_total",
            help: "Times the memory of a burst of connections was returned to the system (malloc_trim).",
            memory?.trims ?? 0)
        text.counter(
            "atsproxy_memory_trimmed_bytes_total",
            help: "Resident bytes those trims returned (RSS before minus after).",
            memory?.bytesReturned ?? 0)
        return text.output
    }

    /// The control socket's answer: the exposition as one JSON string.
    var metricsJSON: JSONValue {
        .object([("ok", true), ("command", .string(ControlCommand.metrics.rawValue)), ("text", .string(metricsText()))])
    }

    private func writeProcess(to text: inout PrometheusText) {
        text.gauge(
            "atsproxy_info", help: "Always 1: the version, enforcement mode and TLS inspection mode, as labels.",
            [
                (
                    [
                        "version": ATSProxyVersion.current, "mode": configuration.mode.rawValue,
                        "inspect": configuration.intercept.mode.rawValue,
                    ], 1
                )
            ])
        text.gauge(
            "atsproxy_start_time_seconds", help: "When the daemon started, in seconds since 1970.",
            Double(startedAt) / 1000)
    }

    private func writeConnections(to text: inout PrometheusText) {
        let counts = statistics.snapshot
        text.counter("atsproxy_connections_accepted_total", help: "Client connections accepted.", counts.accepted)
        text.gauge(
            "atsproxy_connections_open", help: "Client connections open now, on every loop.", Double(counts.open))
        // Per loop thread, the listening one (0) first: how the balancer spread the clients.
        let loads = balancer.loads.enumerated()
        text.gauge(
            "atsproxy_loop_connections_open", help: "Client connections open now, per event loop thread.",
            loads.map { (["loop": String($0.offset)], Double($0.element.openConnections)) })
        text.counter(
            "atsproxy_loop_connections_served_total", help: "Client connections served, per event loop thread.",
            loads.map { (["loop": String($0.offset)], $0.element.servedConnections) })
        text.counter(
            "atsproxy_connections_total", help: "Logged connection lines (tunnels and plain HTTP requests), by action.",
            [
                ("allowed", counts.allowed), ("blocked", counts.blocked), ("failed", counts.failed),
                ("denied", counts.denied),
            ]
            .map { (["action": $0.0] as Labels, $0.1) })
        text.counter(
            "atsproxy_connections_by_capture_total",
            help: "Logged connection lines, by how the connection reached the proxy: proxy setting or transparent.",
            CapturePath.allCases.map { (["capture": $0.rawValue] as Labels, counts.byCapture[$0] ?? 0) })
        text.counter(
            "atsproxy_connection_violations_total",
            help: "Logged connection lines naming each ATS violation (a line with two violations counts under both).",
            statistics.violationCounts.sorted { $0.key < $1.key }.map { (["violation": $0.key], $0.value) })
        text.counter(
            "atsproxy_relayed_bytes_total",
            help: "Bytes relayed in logged connections: up (client to server) and down.",
            [(["direction": "up"] as Labels, counts.bytesUp), (["direction": "down"] as Labels, counts.bytesDown)])
    }

    private func writeFailures(to text: inout PrometheusText) {
        let failures = statistics.failureCounts.sorted { $0.key.rawValue < $1.key.rawValue }
        text.counter(
            "atsproxy_connection_failures_total",
            help: "Logged connection lines with a failure code (docs/log-format.md), by code.",
            failures.map { (["failure": $0.key.rawValue], $0.value) })
    }

    private func writeRequests(to text: inout PrometheusText) {
        let requests = statistics.requestCounts.sorted {
            ($0.key.action.rawValue, $0.key.statusClass) < ($1.key.action.rawValue, $1.key.statusClass)
        }
        text.counter(
            "atsproxy_requests_total",
            help: "Intercept mode's HTTP requests, by their connection's action and status class (none: no response).",
            requests.map { (["action": $0.key.action.rawValue, "status_class": $0.key.statusClass], $0.value) })
    }

    private func writeProbes(to text: inout PrometheusText) {
        let probeCounts = statistics.probes
        text.counter(
            "atsproxy_probes_started_total", help: "Verdict probes started (cache misses).", probeCounts.startedCount)
        text.counter(
            "atsproxy_probes_not_started_total", help: "Verdict probes not started: too many handshakes under way.",
            probeCounts.notStartedCount)
        let finished = probeCounts.finishedCounts
        text.counter(
            "atsproxy_probes_finished_total", help: "Verdict probes ended, by outcome.",
            ProbeStatistics.Outcome.allCases.map { (["outcome": $0.rawValue], finished[$0] ?? 0) })
        text.gauge(
            "atsproxy_probe_handshakes_in_flight", help: "Probe TLS handshakes under way now.",
            Double(probes?.inFlight ?? 0))
        text.histogram(
            "atsproxy_probe_duration_seconds",
            help: "How long verdict probes took, connect to verdict (cancelled ones excluded).",
            probeCounts.durations.snapshot)
    }

    private func writeVerdictCache(to text: inout PrometheusText) {
        let cache = cache.statistics
        text.gauge(
            "atsproxy_verdict_cache_entries", help: "Verdicts cached now, probes in flight included.",
            Double(cache.entries))
        text.gauge(
            "atsproxy_verdict_cache_capacity", help: "The most verdicts the cache holds (--verdict-cache-size).",
            Double(cache.capacity))
        text.counter("atsproxy_verdict_cache_hits_total", help: "Lookups answered from the cache.", cache.hits)
        text.counter("atsproxy_verdict_cache_misses_total", help: "Lookups that started a probe.", cache.misses)
        text.counter(
            "atsproxy_verdict_cache_joined_total", help: "Lookups that waited for a probe another connection started.",
            cache.joinedInFlight)
        text.counter(
            "atsproxy_verdict_cache_evictions_total", help: "Verdicts evicted to stay within the capacity.",
            cache.evictions)
        text.counter(
            "atsproxy_verdict_cache_expired_total", help: "Verdicts removed past their time to live.",
            cache.expiredRemovals)
    }

    private func writeLeaves(to text: inout PrometheusText) {
        text.gauge(
            "atsproxy_intercept_passed_through",
            help: "Hosts passed through for a device (host and device pairs) after it refused the minted certificate.",
            Double(
                intercept?.rejections.passedThrough(limit: configuration.intercept.rejectionsBeforePassthrough).count
                    ?? 0))
        let leaves = intercept?.leaves
        text.counter(
            "atsproxy_leaves_minted_total", help: "Intercept mode's leaf certificates signed by the CA.",
            leaves?.mintedCount ?? 0)
        text.counter(
            "atsproxy_leaf_cache_hits_total", help: "Intercepted handshakes given a leaf a loop had already minted.",
            leaves?.cacheHitCount ?? 0)
    }
}

/// What a reload did, as the metrics count it.
enum ReloadResult: String, CaseIterable {
    /// New settings or another policy took effect.
    case applied
    /// Read and accepted, but nothing that takes effect on reload changed.
    case unchanged
    /// Refused: the running policy and settings stay.
    case refused

    init(_ outcome: ReloadOutcome) {
        if !outcome.succeeded {
            self = .refused
        } else if outcome.applied.isEmpty && outcome.policy?.file?.sha256 == outcome.previousSHA256 {
            self = .unchanged
        } else {
            self = .applied
        }
    }
}
