import ATSPolicy
import LogRecord
import TextFormats
import TrafficReport

/// The live view's state as one JSON object: what `/api/state.json` answers and each `update`
/// event carries, and what the page's script renders.
extension LiveSnapshot {
    package var json: JSONValue {
        .object([
            ("version", .int(Int64(clamping: version))),
            ("policy", .string(context.description)),
            ("client_class", .string(context.clientClass.rawValue)),
            ("os_profile", .string(context.settings.osProfile.releases)),
            ("hosts", .array(rows.map(Self.json))),
            // The hosts table's groups in order; a host's "apps" names them (null: no User-Agent).
            ("apps", .array(groups.map(Self.json))),
            ("no_user_agent", .string(AppKey.noUserAgentText)),
            ("plist", .string(infoPlistFragment)),
            ("plist_scope", .string(FilteredPlist.scope(HostFilter(), groups: groups))),
            ("entries", .int(report.entries.count)),
            ("unused", .array(unused.map(Self.json))),
            ("lines", .int(traffic.lines)),
            // Connection lines by capture path: proxy (the proxy setting) and transparent.
            ("capture", .object(CapturePath.allCases.map { ($0.rawValue, .int(traffic.captureCounts[$0] ?? 0)) })),
            ("recent_connections", .int(traffic.recentConnections.count)),
            ("unparsed_lines", .int(traffic.unparsedLines)),
            ("last_unparsed", .optional(traffic.lastUnparsedReason)),
            ("open_connections", .int(traffic.openConnections)),
            // The page's sentences, worded once here so the script shows what the server rendered.
            ("summary", .string(LivePage.summary(self))),
            ("dropped_text", .string(LivePage.dropped(self))),
            ("nothing_unused", .string(LivePage.nothingUnused)),
            (
                "dropped",
                .object([
                    ("host_lines", .int(traffic.tally.droppedLines)),
                    ("host_requests", .int(traffic.tally.droppedRequests)),
                    ("app_lines", .int(traffic.unlistedAppLines)),
                    ("slice_lines", .int(traffic.slices.droppedLines)),
                    ("connections", .int(traffic.evictedConnections)),
                ])
            ),
            (
                "limits",
                .object([
                    ("hosts", .int(traffic.limits.hosts)),
                    ("recent_connections", .int(traffic.limits.recentConnections)),
                    ("clients_per_host", .int(traffic.limits.clientsPerHost)),
                    ("apps_per_host", .int(traffic.limits.appsPerHost)),
                    ("apps", .int(traffic.limits.apps)),
                    ("slices", .int(traffic.limits.slices)),
                    ("hosts_per_slice", .int(traffic.limits.hostsPerSlice)),
                ])
            ),
        ])
    }

    static func json(_ row: HostRow) -> JSONValue {
        let traffic = row.traffic
        return .object([
            ("host", .string(row.name)),
            ("verdict", .string(row.verdict.rawValue)),
            ("verdict_text", .string(row.verdictText)),
            ("status", .string(row.assessment.disposition.rawValue)),
            ("connections", .int(traffic.connections)),
            ("requests", .int(traffic.requests)),
            ("allowed", .int(traffic.allowed)),
            ("blocked", .int(traffic.blocked)),
            ("failed", .int(traffic.failed)),
            ("last_seen", .optional(row.activity.lastSeen)),
            ("clients", .strings(row.activity.clients)),
            ("more_clients", .bool(row.activity.moreClients)),
            ("apps", .array(row.apps.map { .optional($0.label) })),
            ("more_apps", .bool(row.activity.moreApps)),
            ("violations", .array(row.violations.map(json))),
            ("entry", .optional(row.entryKey)),
        ])
    }

    /// An app's group: `app` is its label, null for no User-Agent; `name` what `?app=` selects it by.
    static func json(_ group: AppGroup) -> JSONValue {
        .object([
            ("app", .optional(group.app.label)), ("name", .string(group.app.text)),
            ("connections", .int(group.activity.connections)), ("requests", .int(group.activity.requests)),
            ("ios", .strings(group.activity.iOSVersions)), ("hosts", .int(group.rows.count)),
            ("heading", .string(group.heading)),
        ])
    }

    static func json(_ advice: ViolationAdvice) -> JSONValue {
        .object([
            ("name", .string(advice.name)), ("explanation", .string(advice.explanation)),
            ("allowed_by", .optional(advice.allowedBy)), ("no_key", .optional(advice.noKey)),
        ])
    }

    static func json(_ key: UnusedKey) -> JSONValue {
        .object([
            ("path", .string(key.path)), ("value", .optional(key.value)), ("action", .string(key.advice.rawValue)),
            ("replacement", .optional(key.replacement)), ("reason", .string(key.reason)),
            ("text", .string(LivePage.unused(key))),
        ])
    }
}

extension FilteredPlist {
    /// What `/api/plist` answers: the suggestion for the filters and what it covers.
    package var json: JSONValue {
        .object([
            ("plist", .string(plist)), ("scope", .string(scope)), ("entries", .int(entries)),
            ("left_out", .int(linesLeftOut)), ("left_out_text", .string(leftOutText)),
        ])
    }
}
