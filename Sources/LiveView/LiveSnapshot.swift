import ATSPolicy
import ProxyWire
import TextFormats
import TrafficReport

/// One host of the live view: the report's judgement of its tally, the verdict of its loads, and
/// when and by whom it was seen.
package struct HostRow: Sendable {
    package let assessment: HostAssessment
    package let verdict: HostVerdict
    package let activity: HostActivity
    package let violations: [ViolationAdvice]
    /// The suggested `NSExceptionDomains` entry that covers it, when it needs one.
    package let entryKey: String?

    package var traffic: HostTraffic { assessment.traffic }
    /// Whether the live view has seen request lines at all (intercept mode): then a host without
    /// any says why.
    package let requestsExpected: Bool

    /// The verdict cell's words: what happened to the app's loads, and why (the violations, the
    /// failure, why loads were passed through unread, why no request was seen).
    package var verdictText: String {
        let reasons = traffic.verdictReasons(verdict, requestsExpected: requestsExpected)
        return reasons.isEmpty ? verdict.label : verdict.label + ": " + reasons.joined(separator: "; ")
    }
    package var name: String { assessment.host.description }
    /// The apps that used it: a host whose lines named none (or that has no activity yet) is
    /// under ``AppKey/noUserAgent``.
    package var apps: [AppKey] { activity.apps.isEmpty ? [.noUserAgent] : activity.apps }
}

/// What every page, the JSON and the events show for one state of the traffic and the policy:
/// computed once per version, since the report judges every host.
package struct LiveSnapshot: Sendable {
    /// The site's version of the state shown (``LiveViewSite/version``).
    package let version: UInt64
    /// The same report `atsproxyctl report --policy` makes of the same lines and settings.
    package let report: TrafficReport
    /// Every host, most recently seen first.
    package let rows: [HostRow]
    /// The hosts table's groups, one per app seen, in ``AppKey/precedes(_:_:)`` order.
    package let groups: [AppGroup]
    package let context: LivePolicyContext
    package let traffic: LiveTraffic

    init(version: UInt64, traffic: LiveTraffic, context: LivePolicyContext) {
        self.version = version
        self.traffic = traffic
        self.context = context
        report = TrafficReport(
            traffic: traffic.tally.hosts, settings: context.settings, clientClass: context.clientClass,
            currentPolicy: context.policy)
        // The table includes tunnels still open; the plist panel, like `report`, only what was logged.
        let shown =
            traffic.openConnectionRecords.isEmpty
            ? report
            : TrafficReport(
                traffic: traffic.tallyWithOpenConnections.hosts, settings: context.settings,
                clientClass: context.clientClass,
                currentPolicy: context.policy)
        let requestsExpected = traffic.tally.hosts.contains { $0.requests > 0 || $0.tlsStreams > 0 }
        rows = shown.assessments.map { assessment in
            let key = shown.entryKey[assessment.host]
            return HostRow(
                assessment: assessment, verdict: HostVerdict(assessment.traffic),
                activity: traffic.activity[assessment.host] ?? HostActivity(),
                violations: ViolationAdvice.advice(for: assessment, entryKey: key), entryKey: key,
                requestsExpected: requestsExpected)
        }
        .sorted { a, b in
            let (x, y) = (a.activity.lastSeen ?? "", b.activity.lastSeen ?? "")
            return x != y ? x > y : a.name < b.name
        }
        groups = AppGroup.groups(rows: rows, apps: traffic.apps)
    }

    /// The narrowest `NSAppTransportSecurity` for everything seen: `report`'s Info.plist fragment.
    package var infoPlistFragment: String { report.infoPlistFragment }

    /// The daemon's policy's keys the traffic never needed.
    package var unused: [UnusedKey] { report.unused ?? [] }

    package func row(_ host: HostIdentity) -> HostRow? { rows.first { $0.assessment.host == host } }
}

/// The host table's filters, from the query (`?app=&client=&host=&verdict=`); an empty one lets
/// all through. Each tests the host as a whole (its apps, its devices, its name, its verdict): a host
/// MyApp used from one device and the browser from another passes `?app=MyApp&client=` the other.
/// The plist panel selects the traffic itself, app and device together (``FilteredPlist``).
package struct HostFilter: Sendable, Hashable {
    /// An app's name in any case, `other` (agents that name no app) or ``AppKey/noUserAgentText``
    /// (``AppKey/matches(_:)``), matched against the host's apps.
    package var app = ""
    /// A device address, matched exactly against the host's devices.
    package var client = ""
    /// Part of the host name, any case.
    package var host = ""
    /// A ``HostVerdict`` raw value.
    package var verdict = ""

    package init(app: String = "", client: String = "", host: String = "", verdict: String = "") {
        self.app = app.trimmingWhitespace
        self.client = client.trimmingWhitespace
        self.host = host.trimmingWhitespace
        self.verdict = verdict.trimmingWhitespace
    }

    package init(_ request: LocalRequest) {
        self.init(
            app: request.queryValue("app") ?? "", client: request.queryValue("client") ?? "",
            host: request.queryValue("host") ?? "", verdict: request.queryValue("verdict") ?? "")
    }

    package func matches(_ row: HostRow) -> Bool {
        (app.isEmpty || row.apps.contains { $0.matches(app) })
            && (client.isEmpty || row.activity.clients.contains(client))
            && (host.isEmpty || row.name.lowercased().contains(host.lowercased()))
            && (verdict.isEmpty || row.verdict.rawValue == verdict)
    }

    /// Whether the host table shows `group`: every group without an app filter, else its app's.
    package func shows(_ group: AppGroup) -> Bool { app.isEmpty || group.app.matches(app) }

    /// What selects the plist panel's traffic: the app, client and host filters (the verdict is a
    /// host's, not its traffic's).
    package var trafficSelection: HostFilter { HostFilter(app: app, client: client, host: host) }
}
