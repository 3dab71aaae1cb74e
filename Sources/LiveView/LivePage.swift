import ATSPolicy
import LogRecord
import TrafficReport

/// The live view's page (`/`): the hosts seen with their verdicts, grouped by app and filtered by
/// the query, the narrowest `NSAppTransportSecurity` for the traffic the filters select, and the
/// policy's unused keys. Complete without JavaScript; its script (``LivePageScript``) keeps it
/// current from the event stream.
struct LivePage {
    let snapshot: LiveSnapshot
    let filter: HostFilter
    /// The plist panel's suggestion for ``filter``.
    let plist: FilteredPlist

    var html: String {
        let rows = snapshot.rows.filter(filter.matches)
        var body = "<h1>atsproxy live view</h1>\n"
        body += "<p class=\"note\">Policy: <code>\(HTML.escaped(snapshot.context.description))</code>; judged as "
        body +=
            "\(HTML.escaped(snapshot.context.clientClass.rawValue)) loads on \(HTML.escaped(snapshot.context.settings.osProfile.releases)).</p>\n"
        body += "<p class=\"note\" id=\"summary\">\(HTML.escaped(Self.summary(snapshot)))</p>\n"
        body += "<p class=\"note\" id=\"dropped\">\(HTML.escaped(Self.dropped(snapshot)))</p>\n"
        body += form
        body +=
            "<div class=\"scroll\"><table class=\"cards\">\n<thead><tr><th>Host</th><th>Verdict</th><th>Violations</th>"
        body +=
            "<th>Requests</th><th>Connections</th><th>Last seen</th><th>Clients</th></tr></thead>\n<tbody id=\"hosts\">\n"
        for group in snapshot.groups where filter.shows(group) {
            let shown = group.rows.filter(filter.matches)
            guard !shown.isEmpty else { continue }
            body += Self.heading(group)
            for row in shown { body += Self.row(row) }
        }
        body += "</tbody></table></div>\n"
        body += "<p class=\"note\" id=\"shown\">\(HTML.escaped(Self.shown(rows.count, of: snapshot.rows.count)))</p>\n"
        body += "<h2>Narrowest NSAppTransportSecurity</h2>\n"
        body += "<p class=\"note\"><span id=\"plist-scope\">\(HTML.escaped(plist.scope))</span>, as "
        body += "<code>atsproxyctl report</code> suggests it: paste inside the top-level "
        body += "<code>&lt;dict&gt;</code> of the app's Info.plist.</p>\n"
        body += "<p class=\"note\" id=\"plist-left-out\">\(HTML.escaped(plist.leftOutText))</p>\n"
        body += "<pre id=\"plist\">\(HTML.escaped(plist.plist))</pre>\n"
        body += "<h2>Unused in the policy</h2>\n<ul id=\"unused\">\n"
        body +=
            snapshot.unused.isEmpty
            ? "<li>\(HTML.escaped(Self.nothingUnused))</li>\n"
            : snapshot.unused.map { "<li>\(HTML.escaped(Self.unused($0)))</li>\n" }.joined()
        body += "</ul>\n"
        return HTML.page(title: "atsproxy live view", body: body, script: LivePageScript.source)
    }

    private var form: String {
        var options = "<option value=\"\">any</option>"
        for verdict in HostVerdict.allCases {
            let selected = verdict.rawValue == filter.verdict ? " selected" : ""
            options += "<option value=\"\(verdict.rawValue)\"\(selected)>\(HTML.escaped(verdict.label))</option>"
        }
        var apps = "<option value=\"\">any</option>"
        var named = false
        for group in snapshot.groups {
            let selected = group.app.matches(filter.app) ? " selected" : ""
            named = named || !selected.isEmpty
            apps +=
                "<option value=\"\(HTML.escaped(group.app.text))\"\(selected)>\(HTML.escaped(group.app.text))</option>"
        }
        if !filter.app.isEmpty && !named {
            // An app not seen (yet): kept selected, so the filter stays what the address says.
            apps += "<option value=\"\(HTML.escaped(filter.app))\" selected>\(HTML.escaped(filter.app))</option>"
        }
        return """
            <form method="get" action="/" id="filters">
            <label>App <select name="app">\(apps)</select></label>
            <label>Client <input name="client" value="\(HTML.escaped(filter.client))" placeholder="192.168.1.23"></label>
            <label>Host contains <input name="host" value="\(HTML.escaped(filter.host))"></label>
            <label>Verdict <select name="verdict">\(options)</select></label>
            <button type="submit">Filter</button>
            </form>

            """
    }

    /// An app's heading row above its hosts; the script builds the same from the JSON.
    static func heading(_ group: AppGroup) -> String {
        "<tr class=\"app-group\"><th colspan=\"7\">\(HTML.escaped(group.heading))</th></tr>\n"
    }

    /// One host's row; the script builds the same cells from the JSON.
    static func row(_ row: HostRow) -> String {
        var html = "<tr><td>\(HTML.hostLink(row.name))</td>"
        html += "<td><span class=\"v-\(row.verdict.rawValue)\">\(HTML.escaped(row.verdictText))</span></td><td>"
        if row.violations.isEmpty {
            html += "none"
        } else {
            html += "<ul class=\"violations\">"
            for advice in row.violations { html += "<li>\(Self.advice(advice))</li>" }
            html += "</ul>"
        }
        html += "</td><td class=\"n\">\(row.traffic.requests)</td><td class=\"n\">\(row.traffic.connections)</td>"
        html += "<td>\(HTML.escaped(row.activity.lastSeen ?? "-"))</td>"
        html += "<td>\(HTML.escaped(clients(row.activity)))</td></tr>\n"
        return html
    }

    /// `<strong>tls_version</strong>: the server negotiated TLS 1.0; …<br>allowed by <code>…</code>`.
    static func advice(_ advice: ViolationAdvice) -> String {
        var html = "<strong>\(HTML.escaped(advice.name))</strong>"
        if !advice.explanation.isEmpty { html += ": " + HTML.escaped(advice.explanation) }
        if let key = advice.allowedBy {
            html += "<br>allowed by <code>\(HTML.escaped(key))</code>"
        } else if let reason = advice.noKey {
            html += "<br>no Info.plist key allows it: \(HTML.escaped(reason))"
        }
        return html
    }

    static func clients(_ activity: HostActivity) -> String {
        activity.clients.isEmpty
            ? "-" : activity.clients.joined(separator: ", ") + (activity.moreClients ? " and more" : "")
    }

    // The texts below are written the same way by the page's script, from the JSON.

    static func summary(_ snapshot: LiveSnapshot) -> String {
        let traffic = snapshot.traffic
        var text =
            "\(traffic.lines) log lines, \(snapshot.rows.count) hosts, \(traffic.recentConnections.count) recent connections"
        text += " (\(traffic.openConnections) with requests and no connection line yet)"
        let open = traffic.openConnectionRecords.count
        if open > 0 {
            text +=
                "; \(open) tunnel\(open == 1 ? "" : "s") open, shown in the table, in the plist once \(open == 1 ? "it ends" : "they end")"
        }
        // Once a connection came another way than the proxy setting (docs/capture.md).
        let transparent = traffic.captureCounts[.transparent] ?? 0
        let wireguard = traffic.captureCounts[.wireguard] ?? 0
        if transparent > 0 || wireguard > 0 {
            text +=
                "; \(traffic.captureCounts[.proxy] ?? 0) through the proxy setting"
                + (transparent > 0 ? ", \(transparent) transparent" : "")
                + (wireguard > 0 ? ", \(wireguard) through WireGuard" : "")
        }
        if traffic.unparsedLines > 0 { text += "; \(traffic.unparsedLines) lines not understood" }
        return text + "."
    }

    static func dropped(_ snapshot: LiveSnapshot) -> String {
        let traffic = snapshot.traffic
        var parts: [String] = []
        if traffic.tally.droppedLines > 0 || traffic.tally.droppedRequests > 0 {
            parts.append(
                "Beyond the limit of \(traffic.limits.hosts) hosts, \(traffic.tally.droppedLines) connection lines and "
                    + "\(traffic.tally.droppedRequests) request lines were not counted: the hosts and the suggestion leave them out."
            )
        }
        if traffic.unlistedAppLines > 0 {
            parts.append(
                "Beyond the limit of \(traffic.limits.apps) apps, \(traffic.unlistedAppLines) lines were counted for their hosts "
                    + "but for no app.")
        }
        if traffic.evictedConnections > 0 {
            parts.append(
                "\(traffic.evictedConnections) older connections were forgotten: host pages show the \(traffic.limits.recentConnections) most recent."
            )
        }
        return parts.joined(separator: " ")
    }

    static func shown(_ shown: Int, of total: Int) -> String { "\(shown) of \(total) hosts shown." }

    static let nothingUnused = "Nothing: the traffic needed every exception of the policy."

    /// As `atsproxyctl report --policy` words it.
    static func unused(_ key: UnusedKey) -> String {
        let value = key.value.map { " = \($0)" } ?? ""
        switch key.advice {
        case .delete: return "delete \(key.path)\(value): \(key.reason)"
        case .raise: return "raise \(key.path)\(value) to \(key.replacement ?? "?"): \(key.reason)"
        case .replace: return "replace \(key.path)\(value) by the suggested entries: \(key.reason)"
        }
    }
}
