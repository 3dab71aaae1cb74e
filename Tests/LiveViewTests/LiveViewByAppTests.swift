import Foundation
import ProxyWire
import Testing
import TextFormats
import TrafficReport

@testable import LiveView

@Suite("LiveView by app: groups, the App filter, and a plist panel that follows the filters")
struct LiveViewByAppTests {
    /// The exception hosts a plist fragment names.
    static func named(in plist: String) -> [String] {
        AppTraffic.exceptionHosts.filter { plist.contains("<key>\($0)</key>") }
    }

    static func json(_ site: LiveViewSite, _ target: String) throws -> JSONValue {
        let response = try #require(site.response(target))
        #expect(response.status == 200)
        return try JSONValue(parsing: response.body)
    }

    /// The `<pre id="plist">` of a page, its markup unescaped.
    static func pagePlist(_ page: String) -> String {
        guard let start = page.range(of: "<pre id=\"plist\">"),
            let end = page.range(of: "</pre>", range: start.upperBound..<page.endIndex)
        else { return "" }
        return String(page[start.upperBound..<end.lowerBound]).replacing("&lt;", with: "<").replacing("&gt;", with: ">")
            .replacing("&quot;", with: "\"").replacing("&#39;", with: "'").replacing("&amp;", with: "&")
    }

    @Test(
        "the plist for a filter names only the hosts of the traffic it selects, and says what it covers",
        arguments: [
            ("", AppTraffic.exceptionHosts, "For every app and browser seen so far"),
            ("app=MyApp", ["legacy.example.com"], "For MyApp"),
            ("app=myapp", ["legacy.example.com"], "For MyApp"),
            ("app=Other%20App", ["old.example.net"], "For Other App"),
            ("app=other", ["plain.example.org"], "For other (browsers and agents that name no app)"),
            ("app=%28no+User-Agent%29", ["bare.example.info"], "For loads with no User-Agent"),
            (
                "client=192.168.1.40", ["plain.example.org", "old.example.net"],
                "For every app and browser seen so far (client 192.168.1.40)"
            ),
            (
                "host=example.com", ["legacy.example.com"],
                "For every app and browser seen so far (hosts containing \"example.com\")"
            ),
            (
                "app=MyApp&client=192.168.1.23&host=legacy", ["legacy.example.com"],
                "For MyApp (client 192.168.1.23, hosts containing \"legacy\")"
            ),
            ("app=MyApp&client=192.168.1.40", [], "For MyApp (client 192.168.1.40)"),
            ("app=NoSuchApp", [], "For NoSuchApp"),
        ])
    func filteredPlist(query: String, hosts: [String], scope: String) throws {
        let site = liveSite(AppTraffic.lines)
        let answer = try Self.json(site, "/api/plist?" + query)
        let plist = try #require(answer["plist"]?.stringValue)
        #expect(Self.named(in: plist) == hosts, "\(plist)")
        #expect(answer["scope"]?.stringValue == scope)
        #expect(answer["entries"]?.intValue == Int64(hosts.count))
        #expect(answer["left_out"]?.intValue == 0)
        // The page without JavaScript shows the same panel.
        let page = site.page("/?" + query)
        #expect(Self.named(in: Self.pagePlist(page)) == hosts)
        #expect(page.contains("<span id=\"plist-scope\">\(HTML.escaped(scope))</span>"))
    }

    @Test("unfiltered, the panel is report's suggestion for every app, with each host's own exception")
    func unfilteredIsEveryApp() throws {
        let site = liveSite(AppTraffic.lines)
        let plist = try #require(try Self.json(site, "/api/plist")["plist"]?.stringValue)
        let batch = batchReport(AppTraffic.lines, context: site.context)
        #expect(plist == batch.report.infoPlistFragment)
        #expect(plist == site.snapshot.infoPlistFragment)
        let state = try Self.json(site, "/api/state.json")
        #expect(state["plist_scope"]?.stringValue == "For every app and browser seen so far")
        let myApp = try #require(try Self.json(site, "/api/plist?app=MyApp")["plist"]?.stringValue)
        #expect(myApp.contains("<key>NSExceptionMinimumTLSVersion</key>"))
        #expect(!myApp.contains("NSExceptionAllowsInsecureHTTPLoads"))
        let browser = try #require(try Self.json(site, "/api/plist?app=other")["plist"]?.stringValue)
        #expect(browser.contains("<key>NSExceptionAllowsInsecureHTTPLoads</key>"))
        #expect(!browser.contains("NSExceptionMinimumTLSVersion"))
    }

    @Test("the hosts table is grouped by app, a host under each app that used it, in the page and the JSON")
    func grouped() throws {
        let site = liveSite(AppTraffic.lines)
        let page = site.page("/")
        let headings = page.components(separatedBy: "<tr class=\"app-group\"><th colspan=\"7\">").dropFirst()
            .map { String($0.prefix { $0 != "<" }) }
        #expect(
            headings == [
                "MyApp (iOS 18.0): 2 hosts, 2 connections", "Other App (iOS 18.0): 1 host, 1 connection",
                "other (browsers and agents that name no app): 2 hosts, 2 connections",
                "(no User-Agent): 1 host, 1 connection",
            ])
        #expect(
            listedHosts(page) == [
                "api.myapp.test", "legacy.example.com", "old.example.net", "api.myapp.test", "plain.example.org",
                "bare.example.info",
            ])
        #expect(page.contains("<p class=\"note\" id=\"shown\">5 of 5 hosts shown.</p>"))

        let state = try Self.json(site, "/api/state.json")
        let apps = try #require(state["apps"]?.arrayValue)
        #expect(apps.map { $0["name"]?.stringValue } == ["MyApp", "Other App", "other", "(no User-Agent)"])
        #expect(apps.map { $0["heading"]?.stringValue } == headings)
        #expect(apps.last?["app"] == .null, "no User-Agent is null, no app's name")
        #expect(apps.first?["ios"] == .strings(["18.0"]))
        #expect(state["no_user_agent"]?.stringValue == "(no User-Agent)")
        let hosts = try #require(state["hosts"]?.arrayValue)
        let shared = try #require(hosts.first { $0["host"]?.stringValue == "api.myapp.test" })
        #expect(shared["apps"] == .strings(["MyApp", "other"]))
        #expect(shared["more_apps"] == .bool(false))
        let bare = try #require(hosts.first { $0["host"]?.stringValue == "bare.example.info" })
        #expect(bare["apps"] == .array([.null]))
    }

    @Test(
        "an app filter shows only that app's group and its select says which",
        arguments: [
            ("app=other", ["api.myapp.test", "plain.example.org"], "other"),
            ("app=MYAPP", ["api.myapp.test", "legacy.example.com"], "MyApp"),
            ("app=%28no%20User-Agent%29", ["bare.example.info"], "(no User-Agent)"),
            ("app=Other%20App&client=192.168.1.23", [], "Other App"),
        ])
    func appFilter(query: String, hosts: [String], selected: String) {
        let page = liveSite(AppTraffic.lines).page("/?" + query)
        #expect(listedHosts(page) == hosts)
        #expect(page.components(separatedBy: "class=\"app-group\"").count - 1 == (hosts.isEmpty ? 0 : 1))
        let option = "<option value=\"\(HTML.escaped(selected))\" selected>"
        #expect(page.contains(option), "\(option)")
    }

    @Test("a host's apps are bounded like its devices; pairs beyond the slices' limit are said to be left out")
    func bounded() throws {
        var limits = LiveTraffic.Limits()
        limits.appsPerHost = 2
        limits.slices = 2
        let lines = (0..<4).map { index in
            appLine(
                "shared.example.com", userAgent: "App\(index)/1 CFNetwork/1 Darwin/24.0.0", client: AppTraffic.phone)
        }
        let site = liveSite(lines, limits: limits)
        let host = try #require(site.snapshot.rows.first)
        #expect(host.activity.apps == [.agent("App0"), .agent("App1")])
        #expect(host.activity.moreApps)
        #expect(site.traffic.slices.droppedLines == 2)
        let answer = try Self.json(site, "/api/plist?app=App0")
        #expect(answer["left_out"]?.intValue == 2)
        #expect(answer["left_out_text"]?.stringValue?.contains("may leave them out") == true)
        #expect(try Self.json(site, "/api/plist")["left_out"]?.intValue == 0, "the whole tally has every line")
    }
}
