import Foundation
import Onboarding
import ProxyWire
import TLSTestSupport
import Testing

/// `/proxy.pac`, run by a real JavaScript engine (Node.js, Debian's `nodejs`) in an empty context:
/// no PAC helper functions, as the script promises to need none.
@Suite("Proxy auto-config", .startsProcesses(timeLimit: .seconds(90)))
struct ProxyAutoConfigTests {
    static let node = "/usr/bin/node"
    static let proxy = "PROXY 192.168.1.20:8080"

    /// Runs the script's FindProxyForURL for each (url, host) and returns its answers.
    static func evaluate(_ script: String, _ cases: [(url: String, host: String)]) throws -> [String] {
        let directory = FileManager.default.temporaryDirectory.path + "/atsproxy-pac-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try script.write(toFile: directory + "/proxy.pac", atomically: true, encoding: .utf8)
        let input = try JSONSerialization.data(withJSONObject: cases.map { [$0.url, $0.host] })
        let harness = """
            const fs = require("fs"), vm = require("vm");
            const context = vm.createContext({});
            vm.runInContext(fs.readFileSync(process.argv[1], "utf8"), context, { filename: "proxy.pac" });
            for (const [url, host] of JSON.parse(fs.readFileSync(0, "utf8"))) console.log(context.FindProxyForURL(url, host));
            """
        let result = try runCommand(node, ["-e", harness, directory + "/proxy.pac"], input: input, timeLimit: 30)
        try #require(result.status == 0, "\(result.standardError)")
        return result.standardOutput.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(
            String.init)
    }

    static func pac(_ target: String, pacHosts: [PACHostPattern] = [], listener: String = Fixture.listener) throws
        -> String
    {
        let site = OnboardingSite(configuration: Fixture.configuration(pacHosts: pacHosts))
        let response = Fixture.response(
            site, Fixture.request(target, arrival: .direct(secure: false), listener: listener))
        try #require(response.status == 200, "\(Fixture.body(response))")
        #expect(response.header("Content-Type") == "application/x-ns-proxy-autoconfig")
        return Fixture.body(response)
    }

    /// (url, host, answer with every host proxied, answer with `?hosts=api.example.com,*.b.example`).
    static let table: [(url: String, host: String, all: String, only: String)] = [
        ("https://www.example.com/", "www.example.com", proxy, "DIRECT"),
        ("https://api.example.com/v1", "api.example.com", proxy, proxy),
        ("https://API.Example.COM/", "API.Example.COM", proxy, proxy),
        ("https://api.example.com./", "api.example.com.", proxy, proxy),
        ("https://x.api.example.com/", "x.api.example.com", proxy, "DIRECT"),
        ("https://b.example/", "b.example", proxy, proxy),
        ("https://deep.sub.b.example./", "deep.sub.b.example.", proxy, proxy),
        ("https://notb.example/", "notb.example", proxy, "DIRECT"),
        ("http://atsproxy.test/", "atsproxy.test", proxy, proxy),
        ("https://atsproxy.test./check", "atsproxy.test.", proxy, proxy),
        ("http://93.184.216.34/", "93.184.216.34", proxy, "DIRECT"),
        ("http://10.0.0.5:8000/", "10.0.0.5", proxy, "DIRECT"),
        ("http://[2001:db8::1]/", "[2001:db8::1]", proxy, "DIRECT"),
        ("http://[2001:db8::1]/", "2001:db8::1", proxy, "DIRECT"),
        ("http://printer/", "printer", proxy, "DIRECT"),
        ("http://nas.local/", "nas.local", proxy, "DIRECT"),
        ("http://localhost:3000/", "localhost", "DIRECT", "DIRECT"),
        ("http://app.localhost/", "app.localhost", "DIRECT", "DIRECT"),
        ("http://127.0.0.1/", "127.0.0.1", "DIRECT", "DIRECT"),
        ("http://127.1.2.3/", "127.1.2.3", "DIRECT", "DIRECT"),
        ("http://127.example.com/", "127.example.com", proxy, "DIRECT"),
        ("http://[::1]/", "[::1]", "DIRECT", "DIRECT"),
        ("http://192.168.1.20:8080/", "192.168.1.20", "DIRECT", "DIRECT"),
        ("https://apple.com/", "apple.com", "DIRECT", "DIRECT"),
        ("https://www.apple.com./", "www.apple.com.", "DIRECT", "DIRECT"),
        ("https://1-courier.push.apple.com/", "1-courier.push.apple.com", "DIRECT", "DIRECT"),
        ("https://apps.apple.com/app/id1", "apps.apple.com", "DIRECT", "DIRECT"),
        ("https://itunes.apple.com/", "itunes.apple.com", "DIRECT", "DIRECT"),
        ("https://mask.icloud.com/", "mask.icloud.com", "DIRECT", "DIRECT"),
        ("https://p42-content.icloud-content.com/", "p42-content.icloud-content.com", "DIRECT", "DIRECT"),
        ("https://is1-ssl.mzstatic.com/", "is1-ssl.mzstatic.com", "DIRECT", "DIRECT"),
        ("https://gateway.icloud.com/", "GATEWAY.ICLOUD.COM", "DIRECT", "DIRECT"),
        ("https://api.apple-cloudkit.com/", "api.apple-cloudkit.com", "DIRECT", "DIRECT"),
        ("https://updates.cdn-apple.com/", "updates.cdn-apple.com", "DIRECT", "DIRECT"),
        ("https://x.aaplimg.com/", "x.aaplimg.com", "DIRECT", "DIRECT"),
        ("https://notapple.com/", "notapple.com", proxy, "DIRECT"),
        ("https://apple.com.evil.example/", "apple.com.evil.example", proxy, "DIRECT"),
    ]

    @Test("every host goes to the proxy but loopback, the proxy itself and Apple's services")
    func everything() throws {
        let answers = try Self.evaluate(try Self.pac("/proxy.pac"), Self.table.map { ($0.url, $0.host) })
        for (row, answer) in zip(Self.table, answers) { #expect(answer == row.all, "\(row.host)") }
        #expect(answers.count == Self.table.count)
    }

    @Test("with ?hosts= only those hosts go to the proxy, *.domain including the domain")
    func onlyListed() throws {
        let script = try Self.pac("/proxy.pac?hosts=api.example.com,%20*.B.example.")
        let answers = try Self.evaluate(script, Self.table.map { ($0.url, $0.host) })
        for (row, answer) in zip(Self.table, answers) { #expect(answer == row.only, "\(row.host)") }
        #expect(answers.count == Self.table.count)
    }

    @Test("the configured PAC hosts apply when the URL names none; the URL's win")
    func configured() throws {
        let configured = try PACHostPattern.list("api.example.com,*.b.example")
        let answers = try Self.evaluate(
            try Self.pac("/proxy.pac", pacHosts: configured), Self.table.map { ($0.url, $0.host) })
        for (row, answer) in zip(Self.table, answers) { #expect(answer == row.only, "\(row.host)") }
        let overridden = try Self.evaluate(
            try Self.pac("/proxy.pac?hosts=www.example.com", pacHosts: configured),
            [("https://www.example.com/", "www.example.com"), ("https://api.example.com/", "api.example.com")])
        #expect(overridden == [Self.proxy, "DIRECT"])
    }

    @Test("the proxy named is the listener the device reached, IPv6 included")
    func listener() throws {
        let answers = try Self.evaluate(
            try Self.pac("/proxy.pac", listener: "[fd00::20]:3128"),
            [("https://example.com/", "example.com"), ("http://[fd00::20]/", "fd00::20")])
        #expect(answers == ["PROXY [fd00::20]:3128", "DIRECT"])
    }

    @Test("no DIRECT fallback after PROXY: a down proxy must not be bypassed")
    func noFallback() throws {
        let script = try Self.pac("/proxy.pac")
        #expect(!script.contains("8080; DIRECT"))
        #expect(!script.contains("dnsResolve") && !script.contains("isInNet"), "no DNS lookups")
    }

    @Test(
        "a bad host pattern is a 400 naming it",
        arguments: ["a.example,b\"c", "*.", "*", "a..b", "x/y", "evil\");alert(1);//"])
    func badPattern(_ list: String) {
        let query = list.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? list
        let response = Fixture.response(
            OnboardingSite(configuration: Fixture.configuration()), Fixture.request("/proxy.pac?hosts=" + query))
        #expect(response.status == 400)
        #expect(Fixture.body(response).contains("is not a host pattern"))
        #expect(response.header("X-ATSProxy") == "onboarding")
    }

    @Test("patterns parse to lowercased names without a trailing dot or brackets")
    func patterns() throws {
        #expect(
            try PACHostPattern.list(" A.Example. , *.B.example,[FD00::1] ,,").map(\.description) == [
                "a.example", "*.b.example", "fd00::1",
            ])
        #expect(try PACHostPattern("*.x.example").includesSubdomains)
        #expect(throws: PACHostPattern.Invalid.self) { try PACHostPattern("") }
    }

    @Test("a hostile listener stays inside the script's strings")
    func hostileListener() throws {
        let script = try Self.pac("/proxy.pac", listener: "1.2.3.4\";x=1;//\u{2028}:80")
        let answers = try Self.evaluate(script, [("https://example.com/", "example.com")])
        #expect(answers == ["PROXY 1.2.3.4\";x=1;//\u{2028}:80"])
    }
}
