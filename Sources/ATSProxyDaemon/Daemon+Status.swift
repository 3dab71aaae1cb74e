import ATSPolicy
import ControlProtocol
import EventLoop
import Glibc
import LogRecord
import ProxyCore
import ProxyWire
import TLSInspection
import TextFormats
import WireGuard

/// `status` (what an operator needs at a glance) and `stats` (the counters, for monitoring).
extension Daemon {
    var statusJSON: JSONValue {
        let now = WallClock.nowMilliseconds()
        return .object(
            [
                ("ok", true),
                ("command", .string(ControlCommand.status.rawValue)),
                ("version", .string(ATSProxyVersion.current)),
                ("pid", .int(Int(getpid()))),
                ("started_at", .string(DateFormat.rfc3339(milliseconds: startedAt))),
                ("uptime_s", .int((now - startedAt) / 1000)),
                ("listeners", .strings(boundListeners)),
                ("threads", .int(loops.count)),
                ("mode", .string(configuration.mode.rawValue)),
                ("inspect", inspectJSON),
                ("onboarding", onboardingJSON),
                ("wireguard", wireguardJSON),
                ("config_file", .optional(configuration.configFile)),
                ("control_socket", .string(configuration.controlSocket)),
                ("log_file", .optional(log.path)),
                ("policy", policy.json),
            ] + counterFields(cache: verdictCacheFields(full: false)) + [
                ("last_reload", lastReload.map(Self.reloadSummary) ?? .null)
            ])
    }

    /// Where devices are set up: the addresses a phone can reach, their onboarding URLs, and the
    /// live view's URL (null when it is off).
    private var onboardingJSON: JSONValue {
        let addresses = deviceAddresses
        return .object([
            ("addresses", .strings(addresses)),
            ("urls", .strings(addresses.map { "http://\($0)/" })),
            ("host", .string("http://\(OnboardingHost.name)/")),
            ("live_view", .optional(webURL)),
        ])
    }

    /// The WireGuard tunnel (null without --wireguard-listen): its port, interface, what runs it,
    /// and its devices.
    private var wireguardJSON: JSONValue {
        guard let wireguard else { return .null }
        return .object([
            ("listen", .string(wireguard.settings.listen.description)),
            ("interface", .string(wireguard.interface)),
            ("engine", .string(wireguard.engineName)),
            ("wireguard_go_pid", wireguard.wireguardGoPID.map { .int(Int($0)) } ?? .null),
            ("directory", .string(wireguard.settings.directory.path)),
            ("endpoint", .optional(wireguard.settings.directory.recordedEndpoint())),
            (
                "devices",
                .array(
                    configuration.deviceNames.all.map {
                        .object([("name", .string($0.name)), ("address", .string($0.address.description))])
                    })
            ),
        ])
    }

    /// Intercept mode at a glance: the mode, the CA, `--passthrough`, and the hosts passed through
    /// for a device because it kept refusing the minted certificate.
    private var inspectJSON: JSONValue {
        let settings = configuration.intercept
        return .object(
            [
                ("mode", .string(settings.mode.rawValue)),
                ("block_style", .string(settings.blockStyle.rawValue)),
                (
                    "ca",
                    intercept == nil
                        ? .null : .string("\(configuration.caDir)/\(CertificateAuthority.certificateFileName)")
                ),
                ("passthrough", .strings(settings.passthrough.map(\.description))),
            ] + passedThroughFields)
    }

    /// `passed_through_after_rejections`: each host passed through for a device that refused its
    /// minted certificate the configured number of times, with the device and the count.
    var passedThroughFields: [(String, JSONValue)] {
        let limit = configuration.intercept.rejectionsBeforePassthrough
        let rejected = intercept?.rejections.passedThrough(limit: limit) ?? []
        return [
            (
                "passed_through_after_rejections",
                .array(
                    rejected.map {
                        .object([
                            ("host", .string($0.pair.host)), ("client", .string($0.pair.client)),
                            ("rejections", .int($0.rejections)),
                        ])
                    })
            ),
            ("rejections_before_passthrough", .int(limit)),
        ]
    }

    var statsJSON: JSONValue {
        .object(
            [
                ("ok", true), ("command", .string(ControlCommand.stats.rawValue)),
                ("uptime_s", .int((WallClock.nowMilliseconds() - startedAt) / 1000)),
            ] + counterFields(cache: verdictCacheFields(full: true)))
    }

    private func counterFields(cache: JSONValue) -> [(String, JSONValue)] {
        let counts = statistics.snapshot
        return [
            ("connections", .object([("active", .int(counts.open)), ("total", .int(counts.accepted))])),
            // Per loop thread, the listening one first: how the balancer spread the clients.
            (
                "loops",
                .array(
                    balancer.loads.map {
                        .object([("active", .int($0.openConnections)), ("total", .int($0.servedConnections))])
                    })
            ),
            (
                "requests",
                .object([
                    ("allowed", .int(counts.allowed)), ("blocked", .int(counts.blocked)),
                    ("failed", .int(counts.failed)),
                    ("denied", .int(counts.denied)),
                ])
            ),
            // The same lines by how they reached the proxy (docs/capture.md).
            ("capture", .object(CapturePath.allCases.map { ($0.rawValue, .int(counts.byCapture[$0] ?? 0)) })),
            ("bytes", .object([("up", .int(counts.bytesUp)), ("down", .int(counts.bytesDown))])),
            // Lines lost to a log that could not be written (a full disk), since start.
            ("log_write_errors", .int(log.writeErrors)),
            ("verdict_cache", cache),
        ]
    }

    /// The verdict cache: its size and limit, and probes in flight, for `status`; `stats` adds the
    /// counters since start, for monitoring (a hit rate, a cache too small to hold the working set).
    private func verdictCacheFields(full: Bool) -> JSONValue {
        let counts = cache.statistics
        var fields: [(String, JSONValue)] = [
            ("entries", .int(counts.entries)), ("max_entries", .int(counts.capacity)),
            ("in_flight", .int(counts.inFlight)), ("ttl_s", .int(cache.timeToLive / 1000)),
            // TLS handshakes under way on all loops (a verdict's probe makes one or two).
            ("handshakes_in_flight", .int(probes?.inFlight ?? 0)),
        ]
        if full {
            fields += [
                ("hits", .int(counts.hits)), ("misses", .int(counts.misses)),
                ("joined_in_flight", .int(counts.joinedInFlight)),
                ("evictions", .int(counts.evictions)), ("expired_removed", .int(counts.expiredRemovals)),
            ]
        }
        return .object(fields)
    }

    private static func reloadSummary(_ outcome: ReloadOutcome) -> JSONValue {
        .object([
            ("at", .string(DateFormat.rfc3339(milliseconds: outcome.at))),
            ("trigger", .string(outcome.trigger.rawValue)),
            ("ok", .bool(outcome.succeeded)),
            ("error", .optional(outcome.failure)),
        ])
    }
}
