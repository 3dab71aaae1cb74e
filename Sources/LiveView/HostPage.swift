import ATSPolicy
import LogRecord
import TrafficReport

/// A host's page (`/host?name=HOST`): what the report makes of it, as `diagnose` words a host (each
/// violation in words with the key that would allow it, and the suggested entry), then its recent
/// connections and the requests logged inside them.
struct HostPage {
    let host: HostIdentity
    let snapshot: LiveSnapshot

    /// Whether the live view has anything on the host at all.
    var hasAnything: Bool { snapshot.row(host) != nil || !connections.isEmpty }

    private var connections: [RecentConnection] { snapshot.traffic.recentConnections.filter { $0.concerns(host) } }

    var html: String {
        let name = host.description
        var body = "<p><a href=\"/\">← all hosts</a></p>\n<h1>\(HTML.escaped(name))</h1>\n"
        if let row = snapshot.row(host) {
            body += summary(row) + explanation(row)
        } else {
            body +=
                "<p>No connection line names this host yet: its connections are still open (their requests are below).</p>\n"
        }
        body += connectionTable(connections) + requestTable(connections)
        return HTML.page(title: "\(name): atsproxy live view", body: body)
    }

    private func summary(_ row: HostRow) -> String {
        let traffic = row.traffic
        var html = "<p>Verdict: <span class=\"v-\(row.verdict.rawValue)\">\(HTML.escaped(row.verdictText))</span>. "
        html +=
            "\(traffic.connections) connections (\(traffic.allowed) allowed, \(traffic.blocked) blocked, \(traffic.failed) failed)"
        if traffic.asServerName > 0 { html += ", \(traffic.asServerName) of them as another CONNECT's server name" }
        html +=
            ", \(traffic.requests) requests. Last seen \(HTML.escaped(row.activity.lastSeen ?? "-")) by \(HTML.escaped(LivePage.clients(row.activity))).</p>\n"
        var facts: [String] = []
        if !traffic.ports.isEmpty {
            facts.append("ports " + traffic.ports.sorted().map(String.init).joined(separator: ", "))
        }
        if !traffic.versions.isEmpty {
            facts.append(traffic.versions.keys.sorted().map(\.humanName).joined(separator: ", "))
        }
        if !traffic.suites.isEmpty { facts.append(traffic.suites.keys.sorted().joined(separator: ", ")) }
        if traffic.cleartextSeen { facts.append("loaded over http://") }
        if !facts.isEmpty { html += "<p class=\"note\">Seen: \(HTML.escaped(facts.joined(separator: "; "))).</p>\n" }
        return html
    }

    /// The report's judgement, as diagnose would conclude it.
    private func explanation(_ row: HostRow) -> String {
        let assessment = row.assessment
        var html = "<h2>What ATS needs for it</h2>\n"
        if !row.violations.isEmpty {
            html += "<ul>" + row.violations.map { "<li>\(LivePage.advice($0))</li>" }.joined() + "</ul>\n"
        }
        switch assessment.disposition {
        case .compliant:
            html += "<p>It passes with the ATS defaults: no exception needed.</p>\n"
        case .exempt:
            html += "<p>A local host: exempt from ATS without any key.</p>\n"
        case .unreached:
            html += "<p>Never reached: the log shows nothing of what it needs.</p>\n"
        case .unfixable:
            html += "<p>No ATS key makes it pass:</p>\n<ul>"
            html += assessment.blockers.map {
                "<li><strong>\(HTML.escaped($0.violation))</strong>: \(HTML.escaped($0.reason))</li>"
            }.joined()
            html += "</ul>\n"
            if !assessment.needs.relaxesNothing {
                html += "<p>Once that is fixed, it also needs \(HTML.escaped(assessment.needs.summary)).</p>\n"
            }
        case .needsException:
            html +=
                "<p>It needs \(HTML.escaped(assessment.needs.summary)): \(HTML.escaped(assessment.reasons.joined(separator: "; "))).</p>\n"
        }
        if let key = row.entryKey, let entry = snapshot.report.entries.first(where: { $0.domain == key }) {
            let folded = key == row.name ? "" : " (the entry for \(key) and its subdomains)"
            html += "<p>The suggested exception entry\(HTML.escaped(folded)):</p>\n"
            html += "<pre>\(HTML.escaped(SuggestedException.infoPlistFragment([entry])))</pre>\n"
        }
        return html
    }

    private func connectionTable(_ connections: [RecentConnection]) -> String {
        let done = connections.filter(\.isComplete)
        var html = "<h2>Recent connections</h2>\n"
        guard !done.isEmpty else {
            return html + "<p>None among the \(snapshot.traffic.limits.recentConnections) most recent.</p>\n"
        }
        html +=
            "<div class=\"scroll\"><table><thead><tr><th>Time</th><th>Client</th><th>Method</th><th>Port</th><th>Action</th>"
        html += "<th>Violations</th><th>TLS</th><th>Upstream error</th></tr></thead><tbody>\n"
        for connection in done {
            guard let record = connection.record else { continue }
            var violations =
                record.violations
                + (record.serverNameCheck.map { check in check.violations.map { "\($0) (server name \(check.host))" } }
                    ?? [])
            if let error = connection.details?.appleError, !violations.isEmpty { violations.append("error \(error)") }
            let versionAndSuite: [String?] = [
                record.server?.version?.plistName, record.server?.cipherName, record.server?.group?.name,
            ]
            let tls = versionAndSuite.compactMap(\.self).joined(separator: " ")
            let unreadable: String? = record.helloUnreadable.map { "unreadable ClientHello: " + $0 }
            let port: String = record.port.map { String($0) } ?? "-"
            let cells: [String] = [
                record.timestamp ?? "-", connection.client ?? "-", record.method ?? "-", port, record.action.rawValue,
                violations.isEmpty ? "none" : violations.joined(separator: ", "), tls.isEmpty ? "-" : tls,
                record.upstreamError ?? unreadable ?? "-",
            ]
            html += "<tr>" + cells.map { "<td>\(HTML.escaped($0))</td>" }.joined() + "</tr>\n"
        }
        return html + "</tbody></table></div>\n"
    }

    private func requestTable(_ connections: [RecentConnection]) -> String {
        let requests = connections.flatMap { connection in
            connection.requests.filter { (try? HostIdentity(parsing: $0.host)) == host }
        }
        guard !requests.isEmpty else { return "" }
        var html =
            "<h2>Requests (intercept mode)</h2>\n<div class=\"scroll\"><table><thead><tr><th>Time</th><th>Method</th><th>URL</th>"
        html += "<th>Status</th><th>Bytes</th><th>Time (ms)</th></tr></thead><tbody>\n"
        for request in requests.sorted(by: { $0.milliseconds > $1.milliseconds }) {
            let stream = request.kind == .tlsStream
            let status =
                request.status.map { "\($0)" + (request.statusText.map { " \($0)" } ?? "") } ?? request.upstreamError
                ?? "-"
            let bytes =
                stream
                ? "\(request.requestBodyBytes) up, \(request.responseBodyBytes) down"
                : request.responseBodyBytes < 0 ? "-" : "\(request.responseBodyBytes)"
            let cells = [
                request.timestamp, stream ? "TLS stream" : request.method, stream ? "-" : request.url, status, bytes,
                "\(request.durationMilliseconds)",
            ]
            html += "<tr>" + cells.map { "<td>\(HTML.escaped($0))</td>" }.joined() + "</tr>\n"
        }
        let dropped = connections.map(\.droppedRequests).reduce(0, +)
        html += "</tbody></table></div>\n"
        if dropped > 0 { html += "<p class=\"note\">\(dropped) more requests were not kept.</p>\n" }
        return html
    }
}
