import ATSPolicy
import Foundation
import ProxyCore
import TLSInspection
import TLSTestSupport
import Testing
import TextFormats

@testable import ATSProxyCtl

/// The URLs `diagnose` loads, and redirects resolved the way URLSession resolves them.
@Suite("diagnose: URLs and redirect targets")
struct LoadURLTests {
    @Test(
        "absolute URLs: scheme, host as written, port, request target",
        arguments: [
            (
                "https://API.Example.com/v1/items?x=1#top", "https", "api.example.com", "API.Example.com", nil,
                "/v1/items?x=1"
            ),
            ("http://example.com", "http", "example.com", "example.com", nil, "/"),
            ("https://example.com:8443?q", "https", "example.com", "example.com", 8443, "/?q"),
            ("wss://user@[::1]:9443/socket", "https", "::1", "[::1]", 9443, "/socket"),
        ] as [(String, String, String, String, Int?, String)])
    func parsing(_ text: String, _ scheme: String, _ host: String, _ hostText: String, _ port: Int?, _ target: String)
        throws
    {
        let url = try LoadURL(parsing: text)
        #expect(url.scheme.rawValue == scheme)
        #expect(url.host.description == host)
        #expect(url.hostText == hostText)
        #expect(url.explicitPort.map(Int.init) == port)
        #expect(url.target == target)
    }

    @Test(
        "what is not an http(s) URL is refused with the reason",
        arguments: [
            ("ftp://example.com/", "is not a scheme ATS governs"), ("example.com/path", "is not an absolute URL"),
            ("https://example.com:99999/", "is not a port number"), ("https:///path", "names no host"),
        ])
    func refused(_ text: String, _ reason: String) {
        #expect(throws: LoadURL.Failure.self) { try LoadURL(parsing: text) }
        do {
            _ = try LoadURL(parsing: text)
        } catch {
            #expect(error.description.contains(reason), "\(error)")
        }
    }

    @Test(
        "a Location resolves against the URL that sent it",
        arguments: [
            ("https://a.test/x/y?q=1", "http://b.test/z", "http://b.test/z"),
            ("https://a.test:8443/x/y", "//b.test/z", "https://b.test/z"),
            ("https://a.test:8443/x/y?q=1", "/z?r=2", "https://a.test:8443/z?r=2"),
            ("https://a.test/x/y?q=1", "?r=2", "https://a.test/x/y?r=2"),
            ("https://a.test/x/y?q=1", "z", "https://a.test/x/z"),
            ("https://a.test/x/", "  z#frag ", "https://a.test/x/z"),
        ])
    func resolving(_ base: String, _ location: String, _ expected: String) throws {
        #expect(try LoadURL(parsing: base).resolving(location).description == expected)
    }

    @Test("the request is a GET of the target with the URL's authority as Host")
    func request() throws {
        let request = String(
            decoding: try LoadURL(parsing: "https://Shop.Example.com:8443/cart?id=7").request, as: UTF8.self)
        #expect(request.hasPrefix("GET /cart?id=7 HTTP/1.1\r\nHost: Shop.Example.com:8443\r\n"))
        #expect(request.hasSuffix("\r\nConnection: close\r\n\r\n"))
    }
}

/// Redirects followed under one ATS policy, against real servers: an HTTPS origin that redirects
/// to http:// on its own host, to another HTTPS host, and to a host with an old TLS version.
@Suite("diagnose: a load follows redirects as URLSession does", .startsProcesses(timeLimit: .seconds(60)))
struct RedirectingLoadTests {
    static func insecureHTTP(for host: String) -> String {
        "<key>NSExceptionDomains</key><dict><key>\(host)</key><dict>"
            + "<key>NSExceptionAllowsInsecureHTTPLoads</key><true/></dict></dict>"
    }

    @Test("a page that answers loads, whatever its status")
    func noRedirect() throws {
        let servers = try RedirectSite()
        let load = try servers.load("https://shop.example.test:\(servers.shop.port)/hello")
        #expect(load.outcome == .loaded(status: 200))
        #expect(load.hops.map(\.status) == [200])
    }

    @Test(
        "https → http on the same host: refused under the defaults with -1022, loaded once insecure loads are allowed")
    func redirectToCleartext() throws {
        let servers = try RedirectSite()
        let url = servers.redirect(to: "http://shop.example.test:\(servers.shopCleartext.port)/landing")
        let refused = try servers.load(url)
        #expect(refused.outcome == .refused)
        #expect(refused.hops.map(\.status) == [301, nil])
        #expect(refused.hops.last?.url.description == "http://shop.example.test:\(servers.shopCleartext.port)/landing")
        let violation = try #require(refused.hops.last?.verdict?.violations.first)
        #expect(violation.kind.name == "cleartext")
        #expect(refused.hops.last?.verdict?.error?.nsurl == -1022)

        let allowed = try servers.load(url, policyXML: Self.insecureHTTP(for: "shop.example.test"))
        #expect(allowed.outcome == .loaded(status: 200))
        #expect(allowed.hops.map(\.status) == [301, 200])
    }

    @Test(
        "https → https on another host: each hop judged for its own host; an exception for the first covers only the first"
    )
    func redirectToAnotherHost() throws {
        let servers = try RedirectSite()
        let url = servers.redirect(to: "https://cdn.example.test:\(servers.shop.port)/asset", status: 302)
        let load = try servers.load(url)
        #expect(load.outcome == .loaded(status: 200))
        #expect(load.hops.map { $0.url.hostText } == ["shop.example.test", "cdn.example.test"])
        // The second hop's http:// redirect is judged for cdn.example.test, which the exception does not name.
        let onward = servers.redirect(
            to:
                "https://cdn.example.test:\(servers.shop.port)/redirect?to=http%3A%2F%2Fcdn.example.test%3A\(servers.shopCleartext.port)%2F"
        )
        let refused = try servers.load(onward, policyXML: Self.insecureHTTP(for: "shop.example.test"))
        #expect(refused.outcome == .refused)
        #expect(refused.hops.map { $0.url.hostText } == ["shop.example.test", "cdn.example.test", "cdn.example.test"])
    }

    @Test("a redirect loop ends after 16 redirects with NSURLErrorDomain -1007")
    func tooManyRedirects() throws {
        let servers = try RedirectSite()
        let load = try servers.load("https://shop.example.test:\(servers.shop.port)/loop")
        guard case .failed(let reason) = load.outcome else {
            Issue.record("expected a failure, got \(load.outcome)")
            return
        }
        #expect(reason.contains("-1007"), "\(reason)")
        #expect(load.hops.count == RedirectingLoad.maximumRedirects + 1)
    }
}

/// `diagnose` loads the URL under each test's dictionary and follows redirects, as nscurl's
/// URLSession does: a page that redirects to http:// or to another host passes only the tests under
/// which the app could load it, and the conclusion says what each host needs.
@Suite("atsproxyctl diagnose loads the URL", .startsProcesses(timeLimit: .seconds(60)))
struct DiagnoseRedirectTests {
    static func test(_ json: JSONValue, _ name: String) -> JSONValue? {
        json["tests"]?.arrayValue?.first { $0["name"]?.stringValue == name }
    }

    @Test(
        "https → http on the same host: only tests allowing insecure HTTP pass; the defaults fail with -1022 at the redirect"
    )
    func redirectToCleartext() throws {
        let site = try RedirectSite()
        let landing = "http://shop.example.test:\(site.shopCleartext.port)/landing"
        let url = site.redirect(to: landing)
        let (text, json) = try site.diagnose(url)
        #expect(text.exitCode == 1, "\(text.standardError)")
        let passing = Set(json.testResults.filter { $0.value == "PASS" }.keys)
        #expect(
            passing
                == Set(
                    ["Allow All Loads"] + DiagnoseCommandTests.nscurlOrder.filter { $0.contains("nsecure HTTP") }
                        + DiagnoseCommandTests.atsproxyExtras), "\(passing)")
        #expect(json["conclusion"]?["kind"]?.stringValue == "exception_needed")
        #expect(json["minimal_exception"]?.serialized == #"{"NSExceptionAllowsInsecureHTTPLoads":true}"#)

        let defaults = try #require(Self.test(json, "ATS Default Connection"))
        #expect(defaults["violations"] == .strings([]), "the first handshake itself passes")
        #expect(defaults["error"]?["nsurl"]?.intValue == -1022)
        #expect(defaults["load"]?["final_status"] == .null)
        let hops = defaults["load"]?["hops"]?.arrayValue ?? []
        #expect(hops.map { $0["url"]?.stringValue } == [url, landing])
        #expect(hops.map { $0["status"]?.intValue } == [301, nil])
        #expect(hops.last?["violations"] == .strings(["cleartext"]))
        let insecure = try #require(Self.test(json, "Allowing Insecure HTTP"))
        #expect(insecure["load"]?["final_status"]?.intValue == 200)
        #expect(insecure["load"]?["hops"]?.arrayValue?.count == 2)

        #expect(
            text.standardOutput.contains(
                "---\nATS Default Connection\nResult : FAIL\nLoad : 301 \(url) -> refused \(landing)\n"
                    + "Violations : cleartext -1022\nError : the load was redirected to \(landing), which ATS refuses: "
            ), "\(text.standardOutput)")
        #expect(text.standardOutput.contains("Load : 301 \(url) -> 200 \(landing)\n"))
    }

    @Test("https → https on another host that needs its own exception: the conclusion sends diagnose there")
    func redirectToAnotherHost() throws {
        let site = try RedirectSite()
        let asset = "https://cdn.example.test:\(site.legacyCDN.port)/asset.js"
        let url = site.redirect(to: asset)
        let (text, json) = try site.diagnose(url)
        #expect(text.exitCode == 1, "\(text.standardError)")
        // No entry for shop.example.test reaches cdn.example.test: only allowing all loads passes.
        #expect(Set(json.testResults.filter { $0.value == "PASS" }.keys) == ["Allow All Loads"])
        let conclusion = try #require(json["conclusion"])
        #expect(conclusion["kind"]?.stringValue == "redirect_needs_exception")
        #expect(conclusion["redirect_url"]?.stringValue == asset)
        #expect(json["minimal_exception"] == .null, "shop.example.test itself passes with the defaults")
        #expect(
            conclusion["text"]?.stringValue
                == "shop.example.test passes with the ATS defaults, but its page redirects to \(asset), which ATS refuses: "
                + "cdn.example.test needs an exception of its own. Run atsproxyctl diagnose \(asset) for it.")
        let defaults = try #require(Self.test(json, "ATS Default Connection"))
        #expect(defaults["load"]?["hops"]?.arrayValue?.last?["violations"] == .strings(["tls_version"]))
        #expect(defaults["error"]?["ssl"]?.intValue == -9836)
        #expect(text.standardOutput.contains("Next: atsproxyctl diagnose \(asset)\n"), "\(text.standardOutput)")

        // Where the conclusion points: that host needs TLS 1.0 allowed.
        let (_, next) = try site.diagnose(asset)
        #expect(next["minimal_exception"]?.serialized == #"{"NSExceptionMinimumTLSVersion":"TLSv1.0"}"#)
    }

    @Test(
        "https → http on another host: the proposed entries, that host's insecure-HTTP one included, pass the whole load"
    )
    func redirectToCleartextElsewhere() throws {
        let site = try RedirectSite()
        let landing = "http://cdn.example.test:\(site.shopCleartext.port)/landing"
        let url = site.redirect(to: landing)
        let (text, json) = try site.diagnose(url)
        #expect(text.exitCode == 1, "\(text.standardError)")
        let conclusion = try #require(json["conclusion"])
        #expect(conclusion["kind"]?.stringValue == "redirect_needs_exception")
        #expect(json["minimal_exception"] == .null, "shop.example.test itself passes with the defaults")
        #expect(
            json["redirect_exceptions"]?.serialized
                == #"[{"domain":"cdn.example.test","exception":{"NSExceptionAllowsInsecureHTTPLoads":true}}]"#)
        #expect(json["whole_load_passes"] == .bool(true))
        #expect(
            conclusion["text"]?.stringValue
                == "shop.example.test passes with the ATS defaults, but its page redirects to \(landing) in cleartext: "
                + "cdn.example.test needs NSExceptionAllowsInsecureHTTPLoads too: with the entries below the whole load "
                + "passes, redirects included (loaded again to check).")
        let plist = json["minimal_exception_plist"]?.stringValue ?? ""
        #expect(plist.contains("<key>cdn.example.test</key>"), "\(plist)")
        #expect(plist.contains("<key>NSExceptionAllowsInsecureHTTPLoads</key>"), "\(plist)")
        #expect(!plist.contains("<key>shop.example.test</key>"), "\(plist)")
        #expect(text.standardOutput.contains("<key>cdn.example.test</key>"), "\(text.standardOutput)")
    }

    @Test("an http:// URL is loaded over https://, as nscurl does, and the header says so")
    func httpRewrittenToHTTPS() throws {
        let site = try RedirectSite()
        let given = "http://shop.example.test:\(site.shop.port)/hello"
        let (text, json) = try site.diagnose(given)
        #expect(text.exitCode == 0, "\(text.standardError)")
        #expect(json["rewritten_to_https"] == .bool(true))
        #expect(json["loaded_url"]?.stringValue == "https://shop.example.test:\(site.shop.port)/hello")
        #expect(
            text.standardOutput.contains(
                "displaying the result of HTTPS loads to https://shop.example.test:\(site.shop.port)/hello.\n"
                    + "\(given) was given: like nscurl, atsproxyctl loads it over https://. Use --cleartext to load the http:// URL itself.\n"
            ),
            "\(text.standardOutput)")
        let defaults = try #require(Self.test(json, "ATS Default Connection"))
        #expect(defaults["load"]?["final_status"]?.intValue == 200)
    }
}

/// `shop.example.test` (a Python HTTPS origin that redirects, and the same origin in cleartext) and
/// `cdn.example.test` (served by the same origin, and by a TLS 1.0-only s_server), all 127.0.0.1 in a
/// hosts file, under one root.
final class RedirectSite {
    let factory: CertificateFactory
    let shop: TestHTTPOrigin
    let shopCleartext: TestHTTPOrigin
    let legacyCDN: TestTLSServer
    let probeService: ProbeService
    let probeLimits: ProbeLimits

    init() throws {
        factory = try CertificateFactory()
        try factory.rootCA("root")
        try factory.certificate(
            "leaf", issuer: "root",
            extensions: ["subjectAltName=DNS:shop.example.test,DNS:cdn.example.test", "extendedKeyUsage=serverAuth"])
        try factory.certificate(
            "cdn", issuer: "root", extensions: ["subjectAltName=DNS:cdn.example.test", "extendedKeyUsage=serverAuth"])
        try "127.0.0.1 shop.example.test cdn.example.test\n".write(
            toFile: factory.path("hosts"), atomically: true, encoding: .utf8)
        shop = try TestHTTPOrigin(
            directory: factory.directory, certificate: factory.path("leaf.pem"), key: factory.path("leaf.key"))
        shopCleartext = try TestHTTPOrigin(directory: factory.directory)
        legacyCDN = try TestTLSServer(
            directory: factory.directory,
            ["-cert", "cdn.pem", "-key", "cdn.key", "-tls1", "-cipher", "ECDHE-RSA-AES128-SHA:@SECLEVEL=0"])
        probeService = ProbeService(
            anchors: try TrustAnchors.loading(caFiles: [factory.path("root.pem")], systemRoots: false))
        probeLimits = ProbeLimits(
            connectTimeout: .seconds(5), handshakeTimeout: .seconds(5),
            hosts: try HostsTable.load(path: factory.path("hosts")))
    }

    /// `https://shop.example.test:PORT/redirect?to=LOCATION&status=STATUS`.
    func redirect(to location: String, status: Int = 301) -> String {
        let encoded = location.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? location
        return "https://shop.example.test:\(shop.port)/redirect?to=\(encoded)&status=\(status)"
    }

    /// The load of `url` under a policy whose NSAppTransportSecurity holds `policyXML`.
    func load(_ url: String, policyXML: String = "") throws -> RedirectingLoad {
        let policy = try PolicyLoader.load(
            bytes: Array("<plist version=\"1.0\"><dict>\(policyXML)</dict></plist>".utf8), file: "test.plist")
        var fetcher = HopFetcher(loop: try ProbeLoop(service: probeService, limits: probeLimits), policy: policy)
        return RedirectingLoad.run(try LoadURL(parsing: url)) { fetcher.fetch($0) }
    }

    /// `atsproxyctl diagnose URL` as text and as JSON.
    func diagnose(_ url: String, _ extra: [String] = []) throws -> (ATSProxyCtl.Result, JSONValue) {
        let common = [
            "--ca-file", factory.path("root.pem"), "--system-roots", "off", "--hosts-file", factory.path("hosts"),
            "--no-survey",
        ]
        let text = ATSProxyCtl.run(["diagnose", url] + common + extra)
        let json = ATSProxyCtl.run(["diagnose", url, "--json"] + common + extra)
        return (text, try JSONValue(parsing: Array(json.standardOutput.utf8)))
    }
}
