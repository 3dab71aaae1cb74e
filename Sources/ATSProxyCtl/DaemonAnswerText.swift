import ATSPolicy
import TextFormats

/// The daemon's JSON answers, in words.
enum DaemonAnswerText {
    static func reload(_ answer: JSONValue, to output: Output) {
        let policy = answer["policy"]
        output.line("Reloaded: policy \(policy?["path"]?.stringValue ?? "(the ATS defaults)")")
        if let hash = policy?["sha256"]?.stringValue {
            let previous = answer["previous_sha256"]?.stringValue
            let change =
                previous == hash ? "unchanged" : "was \(previous.map { String($0.prefix(16)) + "…" } ?? "none")"
            output.line("  sha256 \(hash.prefix(16))… (\(change))")
        }
        output.line("  \(domains(policy))")
        let keys = answer["policy_keys"]
        var lines: [String] = []
        for (field, sign) in [("added", "+"), ("removed", "-"), ("changed", "~")] {
            for change in keys?[field]?.arrayValue ?? [] {
                let path = change["path"]?.stringValue ?? "?"
                switch sign {
                case "+": lines.append("    + \(path) = \(change["new"]?.stringValue ?? "")")
                case "-": lines.append("    - \(path) (was \(change["old"]?.stringValue ?? ""))")
                default:
                    lines.append(
                        "    ~ \(path): \(change["old"]?.stringValue ?? "") → \(change["new"]?.stringValue ?? "")")
                }
            }
        }
        if lines.isEmpty {
            output.line("  No policy key changed.")
        } else {
            output.line("  Policy keys:")
            for line in lines { output.line(line) }
        }
        let applied = strings(answer["settings_applied"])
        if !applied.isEmpty { output.line("  Settings applied: \(applied.joined(separator: ", "))") }
        let restart = strings(answer["needs_restart"])
        if !restart.isEmpty {
            output.line("  Changed but only applied at the next start: \(restart.joined(separator: ", "))")
        }
        let findings = answer["policy_findings"]?.arrayValue ?? []
        if !findings.isEmpty {
            output.line("  Policy findings (applied as iOS would, ignoring what it ignores):")
            for finding in findings {
                let line = finding["line"]?.intValue.map { "line \($0): " } ?? ""
                output.line(
                    "    \(finding["severity"]?.stringValue ?? "warning"): \(line)\(finding["path"]?.stringValue ?? ""): "
                        + (finding["message"]?.stringValue ?? ""))
            }
        }
        let dropped = answer["verdicts_dropped"]?.intValue ?? 0
        if dropped > 0 { output.line("  Cached verdicts dropped (their requirements changed): \(dropped)") }
        output.line("New connections use it; open ones keep the policy they started with.")
    }

    static func status(_ answer: JSONValue, to output: Output) {
        let uptime = answer["uptime_s"]?.intValue ?? 0
        output.line(
            "atsproxy \(answer["version"]?.stringValue ?? "?"), pid \(answer["pid"]?.intValue ?? 0), "
                + "up \(duration(uptime)) (since \(answer["started_at"]?.stringValue ?? "?"))")
        let threads = answer["threads"]?.intValue ?? 0
        row(
            "Listening",
            "\(strings(answer["listeners"]).joined(separator: ", ")) (\(threads) thread\(threads == 1 ? "" : "s"))",
            output)
        row("Mode", answer["mode"]?.stringValue ?? "?", output)
        inspect(answer["inspect"], to: output)
        let policy = answer["policy"]
        row("Policy", policy?["path"]?.stringValue ?? "the ATS defaults (no policy file)", output)
        var facts: [String] = []
        if let hash = policy?["sha256"]?.stringValue { facts.append("sha256 \(hash.prefix(16))…") }
        facts.append("loaded \(policy?["loaded_at"]?.stringValue ?? "?")")
        row("", facts.joined(separator: ", "), output)
        row("", "\(domains(policy)); \(policy?["os_profile"]?.stringValue ?? "?") profile", output)
        onboarding(answer["onboarding"], to: output)
        counters(answer, to: output)
        if let reload = answer["last_reload"], !reload.isNull {
            let when = "\(reload["at"]?.stringValue ?? "?") (\(reload["trigger"]?.stringValue ?? "?"))"
            let result = reload["ok"]?.boolValue == true ? "applied" : "refused: \(reload["error"]?.stringValue ?? "?")"
            row("Last reload", "\(when): \(result)", output)
        } else {
            row("Last reload", "none since start", output)
        }
        row("Config file", answer["config_file"]?.stringValue ?? "none (flags only)", output)
        row("Control", answer["control_socket"]?.stringValue ?? "?", output)
        row("Log", answer["log_file"]?.stringValue ?? "standard output", output)
    }

    /// Where devices are set up, and the live view. An older daemon sends nothing: no rows.
    static func onboarding(_ onboarding: JSONValue?, to output: Output) {
        guard let onboarding, !onboarding.isNull else { return }
        let urls = strings(onboarding["urls"])
        row(
            "Onboarding",
            urls.isEmpty
                ? "loopback only: no address a phone can reach (see atsproxyctl onboard)"
                : urls.joined(separator: ", "), output)
        row("Live view", onboarding["live_view"]?.stringValue ?? "off", output)
    }

    /// Tunnel or intercept mode; in intercept mode, the CA and the hosts not intercepted. An older
    /// daemon sends nothing: no row.
    private static func inspect(_ inspect: JSONValue?, to output: Output) {
        guard let inspect, let mode = inspect["mode"]?.stringValue else { return }
        guard mode == "intercept" else {
            return row("Inspect", "tunnel (TLS judged by probes, relayed unread)", output)
        }
        row(
            "Inspect",
            "intercept (\(inspect["block_style"]?.stringValue ?? "abort") on block), CA \(inspect["ca"]?.stringValue ?? "none")",
            output)
        let patterns = strings(inspect["passthrough"])
        if !patterns.isEmpty { row("", "passed through: \(patterns.joined(separator: ", "))", output) }
        if case .array(let hosts)? = inspect["passed_through_after_rejections"], !hosts.isEmpty {
            let named = hosts.map {
                "\($0["host"]?.stringValue ?? "?") for \($0["client"]?.stringValue ?? "?") "
                    + "(\($0["rejections"]?.intValue ?? 0) rejections)"
            }
            row("", "passed through after a device refused the certificate: \(named.joined(separator: ", "))", output)
        }
    }

    static func counters(_ answer: JSONValue, to output: Output) {
        let connections = answer["connections"]
        row(
            "Connections",
            "\(connections?["active"]?.intValue ?? 0) open, \(connections?["total"]?.intValue ?? 0) since start", output
        )
        if case .array(let loops)? = answer["loops"], loops.count > 1 {
            let perLoop = loops.map { "\($0["active"]?.intValue ?? 0)/\($0["total"]?.intValue ?? 0)" }
            row("", "per loop thread (open/since start): " + perLoop.joined(separator: ", "), output)
        }
        let requests = answer["requests"]
        row(
            "Requests",
            "\(requests?["allowed"]?.intValue ?? 0) allowed, \(requests?["blocked"]?.intValue ?? 0) blocked, "
                + "\(requests?["failed"]?.intValue ?? 0) failed"
                // An older daemon sends no denied count.
                + ((requests?["denied"]?.intValue).map { ", \($0) denied" } ?? ""), output)
        // Shown once a connection came another way than the proxy setting (an older daemon sends none).
        let transparent = answer["capture"]?["transparent"]?.intValue ?? 0
        let wireguard = answer["capture"]?["wireguard"]?.intValue ?? 0
        if transparent > 0 || wireguard > 0 {
            row(
                "",
                "\(answer["capture"]?["proxy"]?.intValue ?? 0) through the proxy setting"
                    + (transparent > 0 ? ", \(transparent) transparent" : "")
                    + (wireguard > 0 ? ", \(wireguard) through WireGuard" : ""), output)
        }
        let bytes = answer["bytes"]
        row("Bytes", "\(bytes?["up"]?.intValue ?? 0) up, \(bytes?["down"]?.intValue ?? 0) down", output)
        // Shown only when lines were lost (an older daemon sends nothing).
        if let lost = answer["log_write_errors"]?.intValue, lost > 0 {
            row("Log", "\(lost) line\(lost == 1 ? "" : "s") could not be written (see the daemon's stderr)", output)
        }
        verdictCache(answer["verdict_cache"], to: output)
    }

    /// The cache's size and limit; with `stats`, its counters on a second line. Fields an older
    /// daemon does not send are left out.
    private static func verdictCache(_ cache: JSONValue?, to output: Output) {
        let entries = cache?["entries"]?.intValue ?? 0
        var line = "\(entries) entr\(entries == 1 ? "y" : "ies") (kept \(cache?["ttl_s"]?.intValue ?? 0) s)"
        if let limit = cache?["max_entries"]?.intValue {
            let probes = cache?["in_flight"]?.intValue ?? 0
            line += "; at most \(limit), \(probes) probe\(probes == 1 ? "" : "s") in flight"
            if let handshakes = cache?["handshakes_in_flight"]?.intValue {
                line += " (\(handshakes) TLS handshake\(handshakes == 1 ? "" : "s"))"
            }
        }
        row("Verdict cache", line, output)
        guard let hits = cache?["hits"]?.intValue else { return }
        let counts = [
            "\(hits) hit\(hits == 1 ? "" : "s")", count(cache?["misses"], "miss", "misses"),
            count(cache?["joined_in_flight"], "joined a probe in flight", "joined a probe in flight"),
            count(cache?["evictions"], "evicted", "evicted"), count(cache?["expired_removed"], "expired", "expired"),
        ]
        row("", counts.joined(separator: ", "), output)
    }

    private static func count(_ value: JSONValue?, _ one: String, _ many: String) -> String {
        let number = value?.intValue ?? 0
        return "\(number) \(number == 1 ? one : many)"
    }

    private static func row(_ label: String, _ value: String, _ output: Output) {
        let padded = label.isEmpty ? "" : label + ":"
        output.line(padded + String(repeating: " ", count: max(1, 15 - padded.count)) + value)
    }

    private static func domains(_ policy: JSONValue?) -> String {
        let exceptions = policy?["exception_domains"]?.intValue ?? 0
        let pinned = policy?["pinned_domains"]?.intValue ?? 0
        return
            "\(exceptions) exception domain\(exceptions == 1 ? "" : "s"), \(pinned) pinned domain\(pinned == 1 ? "" : "s")"
    }

    private static func strings(_ value: JSONValue?) -> [String] {
        (value?.arrayValue ?? []).compactMap(\.stringValue)
    }

    private static func duration(_ seconds: Int64) -> String {
        if seconds < 60 { return "\(seconds) s" }
        if seconds < 3600 { return "\(seconds / 60) min \(seconds % 60) s" }
        if seconds < 86_400 { return "\(seconds / 3600) h \(seconds / 60 % 60) min" }
        return "\(seconds / 86_400) d \(seconds / 3600 % 24) h"
    }
}
