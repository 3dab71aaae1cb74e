import ATSPolicy
import Foundation
import ProxyWire
import Testing
import TextFormats
import TrafficReport

@testable import LiveView

@Suite("LiveViewSite: the pages, the JSON and the events")
struct LiveViewSiteTests {
    /// The recorded days, each alone and all together, under several settings.
    static let days: [(name: String, lines: [String])] = [
        ("enforce day", RecordedLines.reportDay), ("report-mode day", RecordedLines.reportModeDay),
        ("day before", RecordedLines.reportDayBefore),
        ("intercept", RecordedLines.intercept + RecordedLines.interceptEarlier),
        ("three days", RecordedLines.reportDayBefore + RecordedLines.reportDay + RecordedLines.reportModeDay),
    ]
    static let settings: [PolicySettings] = [
        .default, PolicySettings(osProfile: .ios26), PolicySettings(osProfile: .ios9, cipherProfile: .documented),
    ]

    @Test(
        "the plist panel is report's Info.plist fragment for the same lines, and the unused keys are report's",
        arguments: 0..<days.count, 0..<settings.count)
    func plistIsReports(day: Int, setting: Int) throws {
        let lines = Self.days[day].lines
        let context = context(
            settings: Self.settings[setting], policy: try currentPolicy(settings: Self.settings[setting]))
        let site = liveSite(lines, context: context)
        let batch = batchReport(lines, context: context)
        let fragment = batch.report.infoPlistFragment
        #expect(site.snapshot.infoPlistFragment == fragment)
        #expect(site.page("/").contains("<pre id=\"plist\">\(HTML.escaped(fragment))</pre>"))
        let state = try JSONValue(parsing: site.page("/api/state.json"))
        #expect(state["plist"]?.stringValue == fragment)
        #expect(site.snapshot.unused == (batch.report.unused ?? []))
        #expect(
            state["unused"]?.arrayValue?.compactMap { $0["path"]?.stringValue }
                == (batch.report.unused ?? []).map(\.path))
        #expect(site.snapshot.rows.count == batch.report.assessments.count)
    }

    @Test("the recorded days suggest entries and find unused keys (the equality above is not vacuous)")
    func notVacuous() throws {
        let site = liveSite(
            RecordedLines.reportDay + RecordedLines.reportModeDay, context: context(policy: try currentPolicy()))
        #expect(site.snapshot.infoPlistFragment.contains("<key>legacy.example.com</key>"))
        #expect(site.snapshot.unused.contains { $0.path.contains("retired.example.com") })
        #expect(site.page("/").contains("retired.example.com"))
    }

    @Test(
        "filters by client, host and verdict",
        arguments: [
            (
                "",
                Set([
                    "api.example.com", "old.example.org", "legacy.example.com", "s3.cdn.exampleimg.com",
                    "s9.cdn.exampleimg.com",
                    "media.example.org", "pay.example.net", "v2.static.videocdn.net", "selfsigned.example.net",
                    "dhe.example.org",
                    "down.example.com", "shared.example.com", "assets.example.com", "localhost",
                ])
            ),
            (
                "verdict=blocked",
                Set([
                    "legacy.example.com", "s9.cdn.exampleimg.com", "v2.static.videocdn.net", "selfsigned.example.net",
                    "dhe.example.org", "shared.example.com", "assets.example.com",
                ])
            ),
            ("verdict=failed", Set(["down.example.com"])),
            ("host=EXAMPLE.ORG&verdict=allowed", Set(["old.example.org", "media.example.org"])),
            ("host=cdn&verdict=", Set(["s3.cdn.exampleimg.com", "s9.cdn.exampleimg.com", "v2.static.videocdn.net"])),
            ("client=192.168.1.23&host=+legacy+", Set(["legacy.example.com"])),
            ("client=192.168.1.2", Set<String>()),
            ("verdict=not_compliant", Set<String>()),
        ])
    func filters(query: String, hosts: Set<String>) {
        let site = liveSite(RecordedLines.reportDay)
        let listed = listedHosts(site.page("/?" + query))
        #expect(Set(listed) == hosts)
        #expect(listed.count == hosts.count)
        let filter = HostFilter(
            LocalRequest(method: "GET", pathAndQuery: "/?" + query, client: "", arrival: .web, listener: ""))
        #expect(Set(site.snapshot.rows.filter(filter.matches).map(\.name)) == hosts)
    }

    @Test("the report-mode day's hosts with violations are not compliant, with the key that would allow each")
    func reportModeVerdicts() {
        let site = liveSite(RecordedLines.reportModeDay)
        #expect(
            listedHosts(site.page("/?verdict=not_compliant")).sorted() == [
                "feed.example.org", "legacy.example.com", "tracker.example.io", "v1.static.videocdn.net",
            ])
        let legacy = site.snapshot.rows.first { $0.name == "legacy.example.com" }
        #expect(
            legacy?.violations.first?.allowedBy
                == "NSExceptionDomains › legacy.example.com › NSExceptionMinimumTLSVersion = TLSv1.0")
        #expect(
            legacy?.violations.first?.explanation
                == "the server negotiated TLS 1.0; ATS requires TLS 1.2 or later for legacy.example.com")
    }

    @Test("a host's page: its connections, the explanation and the suggested entry; no Info.plist key for certificates")
    func hostPage() {
        let site = liveSite(RecordedLines.reportDay)
        let legacy = site.page("/host?name=legacy.example.com")
        #expect(legacy.contains("NSExceptionDomains › legacy.example.com › NSExceptionMinimumTLSVersion = TLSv1.0"))
        #expect(legacy.contains("&lt;key&gt;legacy.example.com&lt;/key&gt;"), "the suggested entry as plist XML")
        #expect(legacy.contains("192.168.1.23:50014"))
        #expect(legacy.contains("TLSv1.0 TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA") || legacy.contains("TLSv1.0"))
        let selfsigned = site.page("/host?name=selfsigned.example.net")
        #expect(
            selfsigned.contains(
                "(self-signed certificate)<br>no Info.plist key allows it: no ATS key relaxes certificate checks"),
            "the logged explanation once, then why no key helps")
        #expect(selfsigned.contains("No ATS key makes it pass"))
        let intercept = liveSite(RecordedLines.intercept)
        let api = intercept.page("/host?name=API.example.com")
        #expect(
            api.contains(
                "https://api.example.com/v1/items?page=2&amp;q=caf%C3%A9+au+lait&amp;empty=&amp;flag&amp;bad=%zz"))
        #expect(api.contains("302 Found"))
        // Connection 20's line never came: its host has no row, but its requests show.
        #expect(intercept.response("/host?name=ws.example.com")?.status == 200)
        #expect(intercept.page("/host?name=ws.example.com").contains("101 Switching Protocols"))
    }

    @Test("a host's page shows the key-exchange group the probe used, after the version and suite")
    func hostPageGroup() {
        let site = liveSite([
            connectionLine("pq.example.com", client: "192.168.1.23:50001", group: ("X25519MLKEM768", 4588)),
            connectionLine("pq.example.com", client: "192.168.1.23:50002"),
        ])
        let page = site.page("/host?name=pq.example.com")
        #expect(page.contains("<td>TLSv1.3 TLS_AES_128_GCM_SHA256 X25519MLKEM768</td>"), "\(page)")
        // A line with no group (or written before the field) shows the rest.
        #expect(page.contains("<td>TLSv1.3 TLS_AES_128_GCM_SHA256</td>"))
    }

    @Test("hostile strings from the network are escaped on every page")
    func escaping() throws {
        let hostile = "<script>alert(1)</script>\"'&"
        let lines = [
            requestLine(
                "evil.example.com", id: 7, url: "https://evil.example.com/\"><script>alert(2)</script>",
                statusText: "<img src=x onerror=alert(3)>"),
            connectionLine(
                "evil.example.com", id: 7, client: "<b>10.0.0.1</b>:1", action: "blocked", violations: ["expired"],
                explanations: [hostile], upstreamError: "<iframe src=//evil>"),
            connectionLine("<script>.example.com", id: 8),
        ]
        let site = liveSite(lines)
        for target in [
            "/", "/host?name=evil.example.com", "/host?name=%3Cscript%3Ealert(1)%3C%2Fscript%3E",
            "/?host=%3Cscript%3E&client=%22%3E%3Cb%3E",
        ] {
            let page = site.page(target)
            #expect(!page.isEmpty)
            for raw in ["<script>alert", "<img", "<iframe", "<b>", "\"><script", "\"><b"] {
                #expect(!page.contains(raw), "\(target) holds \(raw) unescaped")
            }
            #expect(page.components(separatedBy: "<script>").count <= 2, "only the page's own script")
        }
        #expect(site.page("/").contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;"))
        #expect(site.page("/?client=%22%3E%3Cb%3E").contains("value=\"&quot;&gt;&lt;b&gt;\""))
        // JSON is JSON: the script sets it as text.
        let state = try JSONValue(parsing: site.page("/api/state.json"))
        #expect(state["hosts"]?[0]?["violations"]?[0]?["explanation"]?.stringValue == hostile)
    }

    @Test("an event payload only when something changed: a line, or a new policy")
    func eventPayloads() throws {
        let site = liveSite([])
        let first = try #require(site.eventPayload())
        #expect(site.eventPayload() == nil)
        site.ingest(line: Array(RecordedLines.reportDay[0].utf8))
        let second = try #require(site.eventPayload())
        #expect(site.eventPayload() == nil)
        site.ingest(line: Array("\n".utf8))
        #expect(site.eventPayload() == nil, "an empty line is no change")
        site.ingest(line: Array("not json\n".utf8))
        #expect(site.eventPayload() != nil, "a refused line is counted, and shown")
        site.context = context(settings: PolicySettings(osProfile: .ios26))
        let third = try #require(site.eventPayload())
        #expect(site.eventPayload() == nil)
        for payload in [first, second, third] {
            let text = String(decoding: payload, as: UTF8.self)
            #expect(text.hasPrefix("event: update\ndata: {"))
            #expect(text.hasSuffix("}\n\n"))
            #expect(text.filter { $0 == "\n" }.count == 3, "one data line")
        }
        let data = String(decoding: third, as: UTF8.self).dropFirst("event: update\ndata: ".count).dropLast(2)
        let state = try JSONValue(parsing: String(data))
        #expect(state["version"]?.intValue == Int64(site.version))
        #expect(state["os_profile"]?.stringValue == "iOS 26")
        #expect(state["hosts"]?.arrayValue?.count == 1)
    }

    @Test(
        "routes: GET and HEAD, 404 elsewhere, 405 for other methods",
        arguments: [
            ("GET", "/", 200, "text/html; charset=utf-8"), ("HEAD", "/", 200, "text/html; charset=utf-8"),
            ("GET", "/?verdict=blocked", 200, "text/html; charset=utf-8"),
            ("GET", "/host?name=legacy.example.com", 200, "text/html; charset=utf-8"),
            ("GET", "/host?name=unseen.example.com", 404, "text/html; charset=utf-8"),
            ("GET", "/host?name=", 404, "text/html; charset=utf-8"),
            ("GET", "/api/state.json", 200, "application/json"), ("HEAD", "/events", 200, "text/event-stream"),
            ("GET", "/api/plist?app=MyApp&client=192.168.1.23", 200, "application/json"),
            ("HEAD", "/api/plist", 200, "application/json"), ("POST", "/api/plist", 405, "text/plain; charset=utf-8"),
            ("POST", "/", 405, "text/plain; charset=utf-8"), ("DELETE", "/events", 405, "text/plain; charset=utf-8"),
            ("PUT", "/api/state.json", 405, "text/plain; charset=utf-8"),
            ("GET", "/index.html", 404, "text/plain; charset=utf-8"),
            ("GET", "/api/state", 404, "text/plain; charset=utf-8"),
            ("POST", "/nowhere", 404, "text/plain; charset=utf-8"),
        ])
    func routes(method: String, target: String, status: Int, contentType: String) throws {
        let site = liveSite(RecordedLines.reportDay)
        let response = try #require(site.response(target, method: method))
        #expect(response.status == status)
        #expect(response.header("Content-Type") == contentType)
        #expect(response.header("Cache-Control") == "no-store")
        if status == 405 { #expect(response.header("Allow") == "GET, HEAD") }
    }

    @Test("/events is the traffic channel's stream")
    func events() throws {
        let site = liveSite([])
        let request = LocalRequest(
            method: "GET", pathAndQuery: "/events", client: "127.0.0.1", arrival: .web, listener: "127.0.0.1:8081")
        guard case .eventStream(let channel, let retry) = site.reply(to: request) else {
            Issue.record("no event stream")
            return
        }
        #expect(channel == "traffic")
        #expect(retry == 1000)
    }

    @Test(
        "pages are HTML5 for a phone, with inline style and script only, and their tags balance",
        arguments: [
            "/", "/host?name=legacy.example.com", "/host?name=api.example.com", "/host?name=nowhere.example.com",
        ])
    func pagesAreWellFormed(target: String) {
        let site = liveSite(RecordedLines.reportDay + RecordedLines.intercept)
        let page = site.page(target)
        #expect(page.hasPrefix("<!doctype html>\n<html lang=\"en\">"))
        #expect(page.contains("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"))
        #expect(page.contains("<meta charset=\"utf-8\">"))
        #expect(!page.contains("src=\"http"), "no CDN")
        for tag in [
            "html", "head", "body", "table", "tr", "td", "th", "ul", "li", "pre", "p", "script", "style", "form",
            "select", "a",
        ] {
            #expect(
                page.components(separatedBy: "<\(tag)>").count + page.components(separatedBy: "<\(tag) ").count - 2
                    == page.components(separatedBy: "</\(tag)>").count - 1, "<\(tag)> unbalanced in \(target)")
        }
        #expect(site.response(target)?.header("Content-Security-Policy")?.contains("default-src 'none'") == true)
    }

    @Test("the page says what the host limit left out")
    func droppedIsShown() throws {
        let site = liveSite(RecordedLines.reportDay, limits: .init(recentConnections: 4, hosts: 3))
        let page = site.page("/")
        #expect(listedHosts(page).count == 3)
        #expect(page.contains("Beyond the limit of 3 hosts, \(site.traffic.tally.droppedLines) connection lines"))
        #expect(page.contains("older connections were forgotten"))
        let state = try JSONValue(parsing: site.page("/api/state.json"))
        #expect(state["dropped"]?["host_lines"]?.intValue == Int64(site.traffic.tally.droppedLines))
        #expect(state["dropped"]?["connections"]?.intValue == Int64(RecordedLines.reportDay.count - 4))
    }
}
