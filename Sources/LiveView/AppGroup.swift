/// One group of the hosts table: an app and the hosts it used (a host several apps used is in each
/// of their groups), headed by the app's name, its iOS versions and counts.
package struct AppGroup: Sendable {
    package let app: AppKey
    /// What the live view counted of the app (nothing, for an app beyond ``LiveTraffic/Limits/apps``
    /// that a host still names).
    package let activity: AppActivity
    /// The hosts it used, most recently seen first.
    package let rows: [HostRow]

    /// The heading row's words, as the page and its script show them: `MyApp (iOS 18.0): 3 hosts,
    /// 5 connections, 2 requests`.
    package var heading: String {
        var text = app.explained
        if !activity.iOSVersions.isEmpty { text += " (iOS " + activity.iOSVersions.joined(separator: ", ") + ")" }
        text += ": " + Self.counted(rows.count, "host") + ", " + Self.counted(activity.connections, "connection")
        if activity.requests > 0 { text += ", " + Self.counted(activity.requests, "request") }
        return text
    }

    /// The groups of `rows`: one per app counted or named by a host, in ``AppKey/precedes(_:_:)`` order.
    static func groups(rows: [HostRow], apps: [AppKey: AppActivity]) -> [AppGroup] {
        var keys = Set(apps.keys)
        for row in rows { keys.formUnion(row.apps) }
        return keys.sorted(by: AppKey.precedes).map { key in
            AppGroup(app: key, activity: apps[key] ?? AppActivity(), rows: rows.filter { $0.apps.contains(key) })
        }
    }

    private static func counted(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }
}
