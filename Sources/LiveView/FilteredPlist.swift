import ATSPolicy
import TrafficReport

/// The plist panel for the filters: the narrowest `NSAppTransportSecurity` for the traffic the
/// app, client and host filters select (``HostFilter/trafficSelection``), and the words saying
/// what it covers.
///
/// Without an app or client filter it comes from the whole tally (``LiveTraffic/tally``), as
/// `report` makes it; with one, from the tallies per app and device (``TrafficSlices``) that the
/// filters select, added up host by host. The host filter keeps the hosts whose names contain it.
package struct FilteredPlist: Sendable {
    /// The same report `atsproxyctl report` makes of the selected traffic.
    package let report: TrafficReport
    /// `For every app and browser seen so far`, or `For MyApp (client 192.168.1.23, hosts containing "api")`.
    package let scope: String
    /// Lines the per-app-and-device tallies could not keep that the selection may be missing.
    package let linesLeftOut: Int
    package let limits: LiveTraffic.Limits

    package var plist: String { report.infoPlistFragment }
    package var entries: Int { report.entries.count }

    init(snapshot: LiveSnapshot, filter: HostFilter) {
        let selection = filter.trafficSelection
        limits = snapshot.traffic.limits
        scope = Self.scope(selection, groups: snapshot.groups)
        let hosts: [HostTraffic]
        if selection.app.isEmpty && selection.client.isEmpty {
            linesLeftOut = 0
            guard !selection.host.isEmpty else {
                report = snapshot.report
                return
            }
            hosts = snapshot.traffic.tally.hosts
        } else {
            let selected = { (key: TrafficSlices.Key) in
                (selection.app.isEmpty || key.app.matches(selection.app))
                    && (selection.client.isEmpty || key.client == selection.client)
            }
            hosts = snapshot.traffic.slices.hosts(where: selected)
            linesLeftOut = snapshot.traffic.slices.linesLeftOut(where: selected)
        }
        let needle = selection.host.lowercased()
        let context = snapshot.context
        report = TrafficReport(
            traffic: needle.isEmpty ? hosts : hosts.filter { $0.host.description.lowercased().contains(needle) },
            settings: context.settings, clientClass: context.clientClass, currentPolicy: context.policy)
    }

    /// What the suggestion may leave out, or empty.
    package var leftOutText: String {
        guard linesLeftOut > 0 else { return "" }
        return "Beyond the live view's limits (\(limits.slices) app-and-device pairs, \(limits.hostsPerSlice) hosts "
            + "each), \(linesLeftOut) lines were not counted per app and device: this suggestion may leave them out."
    }

    /// The app as the filter names it, with the client and host filters in parentheses.
    static func scope(_ selection: HostFilter, groups: [AppGroup]) -> String {
        var text = "For "
        if selection.app.isEmpty {
            text += "every app and browser seen so far"
        } else if let group = groups.first(where: { $0.app.matches(selection.app) }) {
            // The name as the app gives it, whatever case the filter used.
            text += group.app == .noUserAgent ? "loads with no User-Agent" : group.app.explained
        } else {
            text += selection.app
        }
        var qualifiers: [String] = []
        if !selection.client.isEmpty { qualifiers.append("client \(selection.client)") }
        if !selection.host.isEmpty { qualifiers.append("hosts containing \"\(selection.host)\"") }
        return qualifiers.isEmpty ? text : text + " (" + qualifiers.joined(separator: ", ") + ")"
    }
}
