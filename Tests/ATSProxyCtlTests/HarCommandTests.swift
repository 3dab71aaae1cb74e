import ATSPolicy
import Foundation
import TLSTestSupport
import Testing
import TextFormats
import TrafficReport

@testable import ATSProxyCtl

/// `atsproxyctl har` on intercept-mode logs (Fixtures/har, described in its README): request lines
/// as HAR 1.2 entries, checked member by member against the HAR 1.2 spec's required fields and types.
@Suite("atsproxyctl har")
struct HarCommandTests {
    static let directory = repositoryRoot + "/Tests/ATSProxyCtlTests/Fixtures/har/"
    static let log = directory + "intercept.log"
    static let rotated = directory + "intercept.log.1.gz"

    /// Runs `har` and parses its output with the project's parser (which tells integers, booleans
    /// and null apart, as the validator needs).
    static func har(_ arguments: [String]) throws -> (document: JSONValue, result: ATSProxyCtl.Result) {
        let result = ATSProxyCtl.run(["har"] + arguments)
        #expect(result.exitCode == 0, "\(result.standardError)")
        let document = try JSONValue(parsing: result.standardOutput)
        let problems = HARValidator.problems(in: document)
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        return (document, result)
    }

    static func entries(_ document: JSONValue) -> [JSONValue] { document["log"]?["entries"]?.arrayValue ?? [] }

    static func entry(_ document: JSONValue, url prefix: String) throws -> JSONValue {
        try #require(
            entries(document).first { $0["request"]?["url"]?.stringValue?.hasPrefix(prefix) == true }, "no \(prefix)")
    }

    @Test("the log's header: version 1.2, creator atsproxy with the project's version, one page per connection")
    func header() throws {
        let (document, _) = try Self.har([Self.log])
        let log = try #require(document["log"])
        #expect(log["version"] == "1.2")
        #expect(log["creator"]?["name"] == "atsproxy")
        // The version `atsproxyctl --version` prints.
        let version = ATSProxyCtl.run(["--version"]).standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!version.isEmpty)
        #expect(log["creator"]?["version"] == .string(version))
        let pages = try #require(log["pages"]?.arrayValue)
        #expect(pages.map { $0["id"]?.stringValue } == ["connection-18", "connection-17", "connection-20"])
        #expect(pages[1]["title"] == "https://api.example.com:443 (client 192.168.1.23:50312)")
        // A page starts with its first request, not with the connection line.
        #expect(pages[1]["startedDateTime"] == "2026-11-24T15:04:05.123Z")
        #expect(pages[1]["pageTimings"] == .object([("onContentLoad", -1), ("onLoad", -1)]))
    }

    @Test("entries are sorted by start, connection lines and lines without kind are none")
    func sorted() throws {
        let (document, _) = try Self.har([Self.log])
        let starts = Self.entries(document).compactMap { $0["startedDateTime"]?.stringValue }
        #expect(
            starts == [
                "2026-11-24T15:03:00.000Z", "2026-11-24T15:04:05.123Z", "2026-11-24T15:04:06.500Z",
                "2026-11-24T15:04:07.000Z",
            ])
        #expect(
            !Self.entries(document).contains {
                $0["request"]?["url"]?.stringValue?.contains("legacy.example.com") == true
            })
    }

    @Test("two requests on one kept-alive connection: one page, one connection, the second reused")
    func keptAlive() throws {
        let (document, _) = try Self.har([Self.log])
        let first = try Self.entry(document, url: "https://api.example.com/v1/items?")
        let second = try #require(
            Self.entries(document).first { $0["request"]?["url"] == "https://api.example.com/v1/items" })
        #expect(second["request"]?["method"] == "POST")
        #expect(first["pageref"] == "connection-17" && second["pageref"] == "connection-17")
        #expect(first["connection"] == "17" && second["connection"] == "17")
        #expect(first["_reused"] == false && second["_reused"] == true)
        #expect(first["serverIPAddress"] == "203.0.113.7")
        // send 0, ttfb 41, duration 44.
        #expect(first["timings"]?["send"] == 0 && first["timings"]?["wait"] == 41 && first["timings"]?["receive"] == 3)
        #expect(first["time"] == 44)
        #expect(first["response"]?["content"] == .object([("size", 5120), ("mimeType", "application/json")]))
        #expect(first["request"]?["headersSize"] == 187 && first["response"]?["headersSize"] == 242)
        #expect(second["request"]?["bodySize"] == 64)
        #expect(second["response"]?["status"] == 302 && second["response"]?["statusText"] == "Found")
        #expect(second["response"]?["redirectURL"] == "https://api.example.com/v1/items/42")
        #expect(second["response"]?["content"]?["mimeType"] == "x-unknown")
        #expect(
            first["_ats"]
                == .object([
                    ("compliant", true), ("action", "allowed"), ("rule", .object([("kind", "default"), ("key", nil)])),
                    ("violations", .array([])), ("error", nil),
                    ("tls_group", .object([("name", "X25519MLKEM768"), ("codepoint", 4588)])),
                    // The fixture's lines predate the app field.
                    ("app", nil),
                ]))
        // A line written before the field: null, as every absent verdict field is.
        #expect(second["_ats"]?["tls_group"] == .null)
    }

    @Test("a request with no response: status 0, _error, timings non-negative, sizes unknown")
    func noResponse() throws {
        let (document, _) = try Self.har([Self.log])
        let entry = try Self.entry(document, url: "https://down.example.net/")
        #expect(entry["response"]?["status"] == 0)
        #expect(entry["response"]?["statusText"] == "")
        #expect(entry["response"]?["headersSize"] == -1 && entry["response"]?["bodySize"] == -1)
        #expect(entry["_error"] == "the server closed the connection before a response")
        // send 2, no ttfb, duration 30: waiting the rest, nothing received.
        #expect(entry["timings"]?["send"] == 2 && entry["timings"]?["wait"] == 28 && entry["timings"]?["receive"] == 0)
        #expect(entry["time"] == 30)
        #expect(entry["serverIPAddress"] == "2001:db8::7", "an IPv6 upstream without brackets and port")
        #expect(entry["_upgrade"] == nil)
    }

    @Test("timings the log gives out of order (ttfb before send) are clamped at 0; an upgrade is _upgrade")
    func upgradeAndClampedTimings() throws {
        let (document, _) = try Self.har([Self.log])
        let entry = try Self.entry(document, url: "https://ws.example.com/socket")
        #expect(entry["timings"]?["send"] == 5 && entry["timings"]?["wait"] == 0 && entry["timings"]?["receive"] == 0)
        #expect(entry["time"] == 5)
        #expect(entry["_upgrade"] == "websocket")
        #expect(entry["response"]?["status"] == 101)
        #expect(entry["_ats"]?["compliant"] == false)
        #expect(entry["_ats"]?["violations"] == .array(["tls_version"]))
        #expect(entry["_ats"]?["error"] == .object([("nsurl", -1200), ("ssl", -9836)]))
    }

    @Test("logged headers become headers and cookies; redacted ones stay redacted and give no cookies")
    func headers() throws {
        let (document, _) = try Self.har([Self.log])
        let shown = try Self.entry(document, url: "https://api.example.com/v1/items?")
        let request = try #require(shown["request"])
        #expect(request["headers"]?.arrayValue?.count == 4)
        #expect(request["headers"]?[2] == .object([("name", "Cookie"), ("value", "session=abc123; theme=dark")]))
        #expect(
            request["cookies"]
                == .array([
                    .object([("name", "session"), ("value", "abc123")]),
                    .object([("name", "theme"), ("value", "dark")]),
                ]))
        #expect(
            shown["response"]?["cookies"]
                == .array([
                    .object([("name", "seen"), ("value", "1"), ("path", "/"), ("secure", true), ("httpOnly", true)])
                ]))

        let redacted = try Self.entry(document, url: "https://ws.example.com/")
        #expect(redacted["request"]?["headers"]?[2] == .object([("name", "Cookie"), ("value", "[redacted]")]))
        #expect(redacted["request"]?["headers"]?[3] == .object([("name", "Authorization"), ("value", "[redacted]")]))
        #expect(redacted["request"]?["cookies"] == .array([]))
        #expect(redacted["response"]?["cookies"] == .array([]))

        // Without --log-headers: empty lists, no redirect.
        let bare = try Self.entry(document, url: "https://down.example.net/")
        #expect(bare["request"]?["headers"] == .array([]) && bare["response"]?["headers"] == .array([]))
        #expect(bare["response"]?["redirectURL"] == "")
    }

    @Test("the query string, parsed and percent-decoded")
    func queryString() throws {
        let (document, _) = try Self.har([Self.log])
        let entry = try Self.entry(document, url: "https://api.example.com/v1/items?")
        let pairs = (entry["request"]?["queryString"]?.arrayValue ?? []).map {
            "\($0["name"]?.stringValue ?? "?")=\($0["value"]?.stringValue ?? "?")"
        }
        // `+` is a space, a `%` without two hex digits stays as it is.
        #expect(pairs == ["page=2", "q=café au lait", "empty=", "flag=", "bad=%zz"])
        let socket = try Self.entry(document, url: "https://ws.example.com/")
        #expect(socket["request"]?["queryString"] == .array([.object([("name", "token"), ("value", "a/b=c")])]))
    }

    @Test("gzip logs are read as report reads them; a connection number seen again after a restart gets its own page")
    func gzip() throws {
        let (document, _) = try Self.har([Self.rotated, Self.log])
        let entries = Self.entries(document)
        #expect(entries.count == 6)
        #expect(entries.first?["request"]?["url"] == "https://cdn.example.org/img/logo.png?v=3")
        #expect(entries.first?["pageref"] == "connection-5")
        let pages = document["log"]?["pages"]?.arrayValue?.compactMap { $0["id"]?.stringValue }
        #expect(pages == ["connection-5", "connection-17", "connection-18", "connection-17-2", "connection-20"])
        let me = try Self.entry(document, url: "https://api.example.com/v1/me")
        #expect(me["pageref"] == "connection-17")
        let items = try Self.entry(document, url: "https://api.example.com/v1/items?")
        #expect(items["pageref"] == "connection-17-2")
        // The rotated file alone.
        let (alone, _) = try Self.har([Self.rotated])
        #expect(Self.entries(alone).count == 2)
    }

    @Test(
        "--host: exact names and *.suffix patterns, repeatable",
        arguments: [
            (["--host", "api.example.com"], ["api.example.com", "api.example.com", "api.example.com"]),
            (["--host", "API.example.com."], ["api.example.com", "api.example.com", "api.example.com"]),
            (
                ["--host", "*.example.com"],
                ["api.example.com", "api.example.com", "api.example.com", "ws.example.com"]
            ),
            (["--host", "*.example.org", "--host", "down.example.net"], ["cdn.example.org", "down.example.net"]),
            (["--host", "example.com"], []),
        ])
    func hostFilter(arguments: [String], hosts: [String]) throws {
        let (document, _) = try Self.har([Self.rotated, Self.log] + arguments)
        let urls = Self.entries(document).compactMap { $0["request"]?["url"]?.stringValue }
        #expect(urls.compactMap(HTTPArchive.host(ofURL:)) == hosts)
        // Pages only for the connections kept.
        let pages = Set(document["log"]?["pages"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? [])
        #expect(pages == Set(Self.entries(document).compactMap { $0["pageref"]?.stringValue }))
    }

    @Test(
        "--since: an RFC 3339 time or a time ago",
        arguments: [
            (["--since", "2026-11-24T15:04:06Z"], 2),
            (["--since", "2026-11-24T16:04:06.500+01:00"], 2),
            (["--since", "2026-11-24T00:00:00Z"], 4),
            (["--since", "36500d"], 6),
            (["--since", "1s"], 0),
        ])
    func sinceFilter(arguments: [String], count: Int) throws {
        let (document, _) = try Self.har([Self.rotated, Self.log] + arguments)
        #expect(Self.entries(document).count == count)
    }

    @Test("a time ago counts back from now")
    func relativeSince() {
        let now: Int64 = 1_795_532_400_000  // 2026-11-24T15:00:00Z
        #expect(HarCommand.since("30m", now: now) == now - 30 * 60_000)
        #expect(HarCommand.since("2h", now: now) == now - 2 * 3_600_000)
        #expect(HarCommand.since("1d", now: now) == now - 86_400_000)
        #expect(HarCommand.since("2026-11-24T15:00:00Z", now: 0) == now)
        for bad in ["", "d", "2w", "-1h", "1.5h", "yesterday", "2026-11-24", "2026-13-01T00:00:00Z"] {
            #expect(HarCommand.since(bad, now: now) == nil, "\(bad)")
        }
    }

    @Test(
        "a line that is not JSON, or a request line without a member HAR needs, is skipped with FILE:LINE; tls_stream lines are counted"
    )
    func warnings() throws {
        let (_, result) = try Self.har([Self.log])
        #expect(
            result.standardError == """
                atsproxyctl: warning: \(Self.log):7: not a request record: no "url" field; line skipped
                atsproxyctl: warning: \(Self.log):9:146: unterminated string; line skipped
                atsproxyctl: note: 1 tls_stream line (bytes inside the TLS that were not HTTP) has no HAR entry

                """)
    }

    @Test(
        "bad input exits 2 and names what is wrong",
        arguments: [
            (["har", "/nonexistent/atsproxy.log"], "atsproxyctl: error: /nonexistent/atsproxy.log: no such file"),
            (["har", log, "--since", "yesterday"], "atsproxyctl: error: --since: \"yesterday\" is neither"),
            (
                ["har", log, "--host", "*"],
                "atsproxyctl: error: --host: \"*\" is not a host name or a *.suffix pattern"
            ),
            (["har", directory + "har-1.2.schema.json"], "atsproxyctl: error: none of the"),
            (["har"], "name at least one LOG file"),
        ])
    func badInput(arguments: [String], message: String) {
        let result = ATSProxyCtl.run(arguments)
        #expect(result.exitCode == 2)
        #expect(result.standardOutput.isEmpty)
        #expect(result.standardError.contains(message), "\(result.standardError)")
    }

    @Test("a log without request lines (tunnel mode) gives an empty, valid HAR and says why")
    func noRequests() throws {
        let (document, result) = try Self.har([
            repositoryRoot + "/Tests/ATSProxyCtlTests/Fixtures/report/atsproxy.log.1"
        ])
        #expect(Self.entries(document).isEmpty)
        #expect(document["log"]?["pages"] == .array([]))
        #expect(result.standardError.contains("the logs hold no request lines"))
    }

    @Test("names and values are escaped: quotes, controls and non-ASCII come back as written")
    func escaping() throws {
        let scratch = try ScratchDirectory()
        let line = #"""
            {"ts":"2026-11-24T15:04:05.123Z","kind":"request","connection_id":1,"client":"127.0.0.1:1","host":"a.example","port":443,"upstream":"192.0.2.1:443","method":"GET","url":"https://a.example/\u00e9?x=%22q%22%0A","http_version":"HTTP/1.1","status":200,"status_text":"O\"K\u2028","content_type":null,"request_body_bytes":0,"response_body_bytes":0,"request_head_bytes":-1,"response_head_bytes":-1,"send_ms":0,"ttfb_ms":1,"duration_ms":1,"reused":false,"compliant":true,"action":"allowed","rule":{"kind":"default","key":null},"violations":[],"error":null,"upstream_error":null,"upgrade":null,"request_headers":[{"name":"X-Tab","value":"a\tb \\ c"}],"response_headers":null}
            """#
        let path = try scratch.write("one.log", line + "\n")
        let (document, result) = try Self.har([path])
        #expect(result.standardError.isEmpty)
        let entry = try #require(Self.entries(document).first)
        #expect(entry["request"]?["url"] == "https://a.example/é?x=%22q%22%0A")
        #expect(entry["request"]?["queryString"]?[0]?["value"] == "\"q\"\n")
        #expect(entry["response"]?["statusText"] == "O\"K\u{2028}")
        #expect(entry["request"]?["headers"]?[0]?["value"] == "a\tb \\ c")
        #expect(entry["request"]?["headersSize"] == -1)
        #expect(!result.standardOutput.contains("\u{2028}"), "U+2028 is escaped")
        // Foundation's parser agrees: the output is valid JSON in UTF-8.
        #expect(throws: Never.self) { try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) }
    }

    @Test("the validator catches what it is there to catch")
    func validatorBites() throws {
        let (document, _) = try Self.har([Self.log])
        var text = document.serialized
        text = text.replacingOccurrences(of: #""wait":41"#, with: #""wait":-1"#)
        text = text.replacingOccurrences(of: #""redirectURL":"","#, with: "")
        let broken = try JSONValue(parsing: text)
        let problems = HARValidator.problems(in: broken)
        #expect(problems.contains { $0.contains("timings.wait") })
        #expect(problems.contains { $0.contains("response.redirectURL") })
        #expect(problems.contains { $0.contains("time") && $0.contains("sum") })
    }

    @Test("a HAR reader that is not ours (PyPI's haralyzer) reads every entry, and each time is its timings' sum")
    func haralyzer() throws {
        let scratch = try ScratchDirectory()
        let result = ATSProxyCtl.run(["har", Self.rotated, Self.log])
        let output = try scratch.write("out.har", result.standardOutput)
        let script = """
            import json, sys
            from haralyzer import HarParser, HarEntry
            har = json.load(open(sys.argv[1], encoding="utf-8"))
            parser = HarParser(har)
            entries = [HarEntry(e) for e in har["log"]["entries"]]
            names = ("blocked", "dns", "connect", "ssl", "send", "wait", "receive")
            for entry in entries:
                parts = [v for k, v in entry.timings.items() if k in names and v >= 0]
                if entry.time != sum(parts):
                    sys.exit("%s: time %s is not the sum of %s" % (entry.url, entry.time, entry.timings))
            print(json.dumps({"pages": len(parser.pages), "entries": [[e.request.method, e.url, e.status] for e in entries]}))
            """
        let run = try runCommand(testPython, ["-c", script, output], timeLimit: 60)
        #expect(run.status == 0, "\(run.standardError)")
        let read = try #require(try jsonLines(run.standardOutput).first)
        let har = try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
        let ours = try #require(har?["log"] as? [String: Any])
        let entries = try #require(ours["entries"] as? [[String: Any]])
        #expect((read["entries"] as? [[Any]])?.count == entries.count)
        #expect((read["pages"] as? Int ?? 0) >= 1)
    }

    @Test(
        "the output validates against a HAR 1.2 JSON Schema (Fixtures/har/har-1.2.schema.json), with PyPI's jsonschema")
    func jsonSchema() throws {
        let scratch = try ScratchDirectory()
        let result = ATSProxyCtl.run(["har", Self.rotated, Self.log])
        let output = try scratch.write("out.har", result.standardOutput)
        // And a broken copy, so a schema that accepts everything cannot pass.
        let broken = try scratch.write(
            "broken.har", result.standardOutput.replacingOccurrences(of: #""receive": 3"#, with: #""receive": -1"#))
        let script = """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1], encoding="utf-8"))
            jsonschema.Draft7Validator.check_schema(schema)
            jsonschema.validate(json.load(open(sys.argv[2], encoding="utf-8")), schema)
            try:
                jsonschema.validate(json.load(open(sys.argv[3], encoding="utf-8")), schema)
                sys.exit("the broken HAR passed")
            except jsonschema.ValidationError:
                pass
            """
        let run = try runCommand(
            testPython, ["-c", script, Self.directory + "har-1.2.schema.json", output, broken], timeLimit: 60)
        #expect(run.status == 0, "\(run.standardError)")
    }
}

/// HAR 1.2's required members and their JSON types (Jan Odvarko, "HAR 1.2 Spec",
/// softwareishard.com/blog/har-12-spec),
/// checked on every object of a document; plus the timing rules: send, wait and receive never
/// negative, and `time` the sum of the timings that are not -1.
enum HARValidator {
    enum Kind: String {
        case string, number, integer, object, array, boolean

        func matches(_ value: JSONValue) -> Bool {
            switch (self, value) {
            case (.string, .string), (.object, .object), (.array, .array), (.boolean, .bool): true
            case (.number, .int), (.number, .double), (.integer, .int): true
            default: false
            }
        }
    }

    /// Path (relative to the object the table is for) → type; `?` marks an optional member.
    static let tables: [String: [(String, Kind)]] = [
        "document": [("log", .object)],
        "log": [("version", .string), ("creator", .object), ("entries", .array), ("pages?", .array)],
        "creator": [("name", .string), ("version", .string)],
        "page": [
            ("startedDateTime", .string), ("id", .string), ("title", .string), ("pageTimings", .object),
            ("pageTimings.onContentLoad?", .number), ("pageTimings.onLoad?", .number),
        ],
        "entry": [
            ("pageref?", .string), ("startedDateTime", .string), ("time", .number), ("request", .object),
            ("response", .object),
            ("cache", .object), ("timings", .object), ("serverIPAddress?", .string), ("connection?", .string),
        ],
        "request": [
            ("method", .string), ("url", .string), ("httpVersion", .string), ("cookies", .array), ("headers", .array),
            ("queryString", .array), ("headersSize", .integer), ("bodySize", .integer),
        ],
        "response": [
            ("status", .integer), ("statusText", .string), ("httpVersion", .string), ("cookies", .array),
            ("headers", .array),
            ("content", .object), ("redirectURL", .string), ("headersSize", .integer), ("bodySize", .integer),
        ],
        "content": [("size", .integer), ("mimeType", .string)],
        "timings": [
            ("send", .number), ("wait", .number), ("receive", .number), ("blocked?", .number), ("dns?", .number),
            ("connect?", .number), ("ssl?", .number),
        ],
        "nameValue": [("name", .string), ("value", .string)],
    ]

    static func problems(in document: JSONValue) -> [String] {
        var problems: [String] = []
        check(document, "document", at: "", into: &problems)
        guard let log = document["log"] else { return problems }
        check(log, "log", at: "log", into: &problems)
        if let creator = log["creator"] { check(creator, "creator", at: "log.creator", into: &problems) }
        if log["version"] != "1.2" { problems.append("log.version is not \"1.2\"") }
        var pageIDs: Set<String> = []
        for (index, page) in (log["pages"]?.arrayValue ?? []).enumerated() {
            check(page, "page", at: "log.pages[\(index)]", into: &problems)
            if let id = page["id"]?.stringValue, !pageIDs.insert(id).inserted { problems.append("page id \(id) twice") }
        }
        for (index, entry) in (log["entries"]?.arrayValue ?? []).enumerated() {
            let at = "log.entries[\(index)]"
            check(entry, "entry", at: at, into: &problems)
            if let pageref = entry["pageref"]?.stringValue, !pageIDs.contains(pageref) {
                problems.append("\(at).pageref \(pageref) names no page")
            }
            if let started = entry["startedDateTime"]?.stringValue,
                started.wholeMatch(of: #/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/#) == nil
            {
                problems.append("\(at).startedDateTime \(started) is not ISO 8601 with milliseconds and Z")
            }
            if let request = entry["request"] {
                check(request, "request", at: at + ".request", into: &problems)
                for list in ["cookies", "headers", "queryString"] {
                    for (item, value) in (request[list]?.arrayValue ?? []).enumerated() {
                        check(value, "nameValue", at: "\(at).request.\(list)[\(item)]", into: &problems)
                    }
                }
            }
            if let response = entry["response"] {
                check(response, "response", at: at + ".response", into: &problems)
                if let content = response["content"] {
                    check(content, "content", at: at + ".response.content", into: &problems)
                }
                for list in ["cookies", "headers"] {
                    for (item, value) in (response[list]?.arrayValue ?? []).enumerated() {
                        check(value, "nameValue", at: "\(at).response.\(list)[\(item)]", into: &problems)
                    }
                }
            }
            if let timings = entry["timings"] {
                check(timings, "timings", at: at + ".timings", into: &problems)
                var sum = 0.0
                for name in ["blocked", "dns", "connect", "ssl", "send", "wait", "receive"] {
                    guard let value = timings[name]?.doubleValue else { continue }
                    if ["send", "wait", "receive"].contains(name), value < 0 {
                        problems.append("\(at).timings.\(name) is \(value), negative")
                    }
                    if value < 0, value != -1 {
                        problems.append("\(at).timings.\(name) is \(value): only -1 may be negative")
                    }
                    if value >= 0 { sum += value }
                }
                if let time = entry["time"]?.doubleValue, time != sum {
                    problems.append("\(at).time is \(time), not the sum \(sum) of the non-negative timings")
                }
            }
        }
        return problems
    }

    private static func check(_ object: JSONValue, _ table: String, at base: String, into problems: inout [String]) {
        guard object.objectValue != nil else {
            problems.append("\(base.isEmpty ? "the document" : base) is not an object")
            return
        }
        for (path, kind) in tables[table] ?? [] {
            let optional = path.hasSuffix("?")
            let keys = (optional ? String(path.dropLast()) : path).split(separator: ".").map(String.init)
            var value: JSONValue? = object
            for key in keys { value = value?[key] }
            let name = (base.isEmpty ? "" : base + ".") + keys.joined(separator: ".")
            guard let value else {
                if !optional { problems.append("\(name) is missing") }
                continue
            }
            if !kind.matches(value) { problems.append("\(name) is not a JSON \(kind.rawValue)") }
        }
    }
}
