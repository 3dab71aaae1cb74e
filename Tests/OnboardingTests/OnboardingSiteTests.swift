import Foundation
import Onboarding
import ProxyWire
import Testing

/// The onboarding site's routes, as each kind of arrival sees them.
@Suite("Onboarding site")
struct OnboardingSiteTests {
    let site = OnboardingSite(configuration: Fixture.configuration())

    static let routes: [(path: String, type: String)] = [
        ("/", "text/html; charset=utf-8"),
        ("/check", "text/html; charset=utf-8"),
        ("/status.json", "application/json"),
        ("/proxy.pac", "application/x-ns-proxy-autoconfig"),
        ("/ca.mobileconfig", "application/x-apple-aspen-config"),
        ("/ca.pem", "application/x-pem-file"),
        ("/ca.cer", "application/pkix-cert"),
    ]

    @Test(
        "every route answers every arrival with its type, the marker, and no-store", arguments: routes.map(\.path),
        Fixture.arrivals)
    func routeTypes(_ path: String, _ arrival: LocalRequest.Arrival) throws {
        let response = Fixture.response(site, Fixture.request(path, arrival: arrival))
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == Self.routes.first { $0.path == path }?.type)
        #expect(response.header("X-ATSProxy") == "onboarding")
        #expect(response.header("Cache-Control") == "no-store")
        #expect(!response.body.isEmpty)
        if response.header("Content-Type")!.hasPrefix("text/html") {
            #expect(htmlNestingProblems(Fixture.body(response)) == [])
        }
    }

    @Test("step 1 shows as connected only for a request through the proxy", arguments: Fixture.arrivals)
    func connectedStep(_ arrival: LocalRequest.Arrival) {
        let page = Fixture.body(Fixture.response(site, Fixture.request("/", arrival: arrival)))
        let proxied = if case .proxied = arrival { true } else { false }
        #expect(page.contains("You are connected") == proxied)
        #expect(page.contains("not using it as its proxy yet") == !proxied)
        #expect(page.contains("<code>\(Fixture.client)</code>"), "the client address the proxy saw")
        if !proxied {
            #expect(page.contains("Server <code>192.168.1.20</code>, Port <code>8080</code>"))
            #expect(page.contains("URL <code>http://192.168.1.20:8080/proxy.pac</code>"))
            #expect(page.contains("Settings → Wi-Fi → (i) next to this network → Configure Proxy"))
            #expect(page.contains("<a href=\"http://atsproxy.test/\">"))
        }
    }

    @Test("the manual settings split an IPv6 listener into server and port")
    func ipv6Listener() {
        let page = Fixture.body(
            Fixture.response(site, Fixture.request("/", arrival: .direct(secure: false), listener: "[fd00::20]:8080")))
        #expect(page.contains("Server <code>fd00::20</code>, Port <code>8080</code>"))
        #expect(page.contains("http://[fd00::20]:8080/proxy.pac"))
    }

    @Test("the page's CA step: downloads, fingerprint, and both switches spelled out")
    func caStep() {
        let page = Fixture.body(Fixture.response(site, Fixture.request("/")))
        for link in [
            "href=\"/ca.mobileconfig\"", "href=\"/ca.pem\"", "href=\"/ca.cer\"", "href=\"https://atsproxy.test/check\"",
        ] {
            #expect(page.contains(link), "\(link)")
        }
        #expect(page.contains("AB:CD:EF"))
        #expect(page.contains("valid until 2036-11-11"))
        #expect(page.contains("Profile Downloaded"))
        #expect(page.contains("Settings → General → About → Certificate Trust Settings"))
        #expect(page.contains("iOS 10.3"))
        #expect(!page.contains("tunnel"))
    }

    @Test("tunnel mode says the CA is for intercept mode; without a CA the page says how to make one")
    func tunnelWithoutCA() {
        let site = OnboardingSite(configuration: Fixture.configuration(authority: nil, mode: .tunnel))
        let page = Fixture.body(Fixture.response(site, Fixture.request("/")))
        #expect(page.contains("The CA is only needed for intercept mode"))
        #expect(page.contains("atsproxyctl ca init"))
        #expect(page.contains("make run INSPECT=intercept"))
        #expect(!page.contains("/ca.mobileconfig"))
        #expect(page.contains("step 1 is the check"))
    }

    @Test("simulator and emulator notes name this listener")
    func simulators() {
        let page = Fixture.body(Fixture.response(site, Fixture.request("/")))
        #expect(page.contains("xcrun simctl keychain booted add-root-cert ca.pem"))
        #expect(page.contains("emulator -avd NAME -http-proxy http://192.168.1.20:8080"))
        #expect(page.contains("adb shell settings put global http_proxy 192.168.1.20:8080"))
        #expect(page.contains("adb shell settings put global http_proxy :0"))
        #expect(page.contains("Mac's network settings"))
    }

    @Test("a QR code per address, or how to listen on the LAN when there is none")
    func codes() {
        let two = OnboardingSite(
            configuration: Fixture.configuration(addresses: ["192.168.1.20:8080", "[fd00::20]:8080", "127.0.0.1:8080"]))
        let page = Fixture.body(Fixture.response(two, Fixture.request("/")))
        #expect(page.components(separatedBy: "<svg ").count - 1 == 2, "loopback is no address for a phone")
        #expect(page.contains("<figcaption><a href=\"http://[fd00::20]:8080/\">"))
        let none = OnboardingSite(configuration: Fixture.configuration(addresses: ["127.0.0.1:8080"]))
        let lonely = Fixture.body(Fixture.response(none, Fixture.request("/")))
        #expect(!lonely.contains("<svg "))
        #expect(lonely.contains("loopback only"))
        #expect(lonely.contains("<code>--listen 0.0.0.0:8080 --allow-client 192.168.0.0/16</code>"))
    }

    @Test("with a WireGuard tunnel the page offers it as a second way in: its endpoint, the app's QR code, add-device")
    func wireguardOffer() throws {
        let site = OnboardingSite(
            configuration: Fixture.configuration(wireguard: .init(endpoint: "192.168.1.20:51820")))
        let page = Fixture.body(Fixture.response(site, Fixture.request("/")))
        #expect(page.contains("through WireGuard</h2>"))
        #expect(page.contains("<code>192.168.1.20:51820</code>"))
        #expect(page.contains("<code>atsproxyctl wireguard add-device NAME</code>"))
        #expect(
            page.contains("<a href=\"\(OnboardingConfiguration.WireGuardOffer.appStoreURL)\">The WireGuard app</a>"))
        let appCode = try QRCode(OnboardingConfiguration.WireGuardOffer.appStoreURL).svg(modulePixels: 5)
        #expect(page.contains(appCode), "the App Store link's code")
        #expect(htmlNestingProblems(page).isEmpty, "\(htmlNestingProblems(page))")
        let without = Fixture.body(Fixture.response(self.site, Fixture.request("/")))
        #expect(!without.contains("WireGuard"))
    }

    @Test("the live view is linked when there is one")
    func liveView() {
        let site = OnboardingSite(configuration: Fixture.configuration(liveViewURL: "http://192.168.1.20:8081/"))
        #expect(
            Fixture.body(Fixture.response(site, Fixture.request("/"))).contains(
                "<a href=\"http://192.168.1.20:8081/\">"))
        #expect(!Fixture.body(Fixture.response(self.site, Fixture.request("/"))).contains("What the proxy sees"))
    }

    static let checkCases: [(arrival: LocalRequest.Arrival, trusted: Bool)] = [
        (.proxied(secure: true), true), (.direct(secure: true), true), (.proxied(secure: false), false),
        (.direct(secure: false), false),
    ]

    @Test("/check says the CA is trusted over https, and how to check over http", arguments: checkCases)
    func check(_ arrival: LocalRequest.Arrival, trusted: Bool) {
        let page = Fixture.body(Fixture.response(site, Fixture.request("/check", arrival: arrival)))
        #expect(
            page.contains(
                "atsproxy CA is trusted on this device: this page came over HTTPS with a certificate atsproxy made")
                == trusted)
        #expect(page.contains("Open <a href=\"https://atsproxy.test/check\">") == !trusted)
        #expect(page.contains("certificate warning"))
        #expect(page.contains("reached atsproxy directly") == (arrival == .direct(secure: true)))
    }

    static let statusCases: [(arrival: LocalRequest.Arrival, proxied: Bool, secure: Bool)] = [
        (.proxied(secure: true), true, true), (.proxied(secure: false), true, false),
        (.direct(secure: true), false, true), (.direct(secure: false), false, false),
    ]

    @Test("/status.json says whether the request came through the proxy, and how", arguments: statusCases)
    func status(_ arrival: LocalRequest.Arrival, proxied: Bool, secure: Bool) throws {
        let response = Fixture.response(site, Fixture.request("/status.json", arrival: arrival))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        #expect(object["proxied"] as? Bool == proxied)
        #expect(object["secure"] as? Bool == secure)
        #expect(object["client"] as? String == Fixture.client)
    }

    @Test("other paths are 404 naming the path")
    func notFound() {
        let response = Fixture.response(site, Fixture.request("/nope<b>"))
        #expect(response.status == 404)
        #expect(Fixture.body(response) == "atsproxy has no page at /nope<b>\n")
        #expect(response.header("Content-Type") == "text/plain; charset=utf-8")
        #expect(response.header("X-ATSProxy") == "onboarding")
    }

    @Test(
        "methods other than GET and HEAD are 405 with Allow",
        arguments: ["POST", "PUT", "DELETE", "OPTIONS", "CONNECT"])
    func methodNotAllowed(_ method: String) {
        let response = Fixture.response(site, Fixture.request("/", method: method))
        #expect(response.status == 405)
        #expect(response.header("Allow") == "GET, HEAD")
        #expect(Fixture.body(response) == "atsproxy's pages answer GET and HEAD, not \(method)\n")
        #expect(response.header("X-ATSProxy") == "onboarding")
    }

    @Test(
        "HEAD gets GET's response; serialized for HEAD it has GET's Content-Length and no body",
        arguments: routes.map(\.path))
    func head(_ path: String) {
        let get = Fixture.response(site, Fixture.request(path, method: "GET"))
        let head = Fixture.response(site, Fixture.request(path, method: "HEAD"))
        #expect(head.status == get.status)
        #expect(head.headers.map(\.name) == get.headers.map(\.name))
        #expect(head.body == get.body)
        let wire = String(decoding: head.serialized(headOnly: true, keepAlive: false), as: UTF8.self)
        #expect(wire.hasSuffix("Content-Length: \(get.body.count)\r\nConnection: close\r\n\r\n"))
    }

    static let hostile = "<script>alert(1)</script>\"'&"

    @Test(
        "hostile client and listener strings are escaped in every page", arguments: ["/", "/check"], Fixture.arrivals)
    func escaping(_ path: String, _ arrival: LocalRequest.Arrival) {
        let site = OnboardingSite(
            configuration: Fixture.configuration(
                authority: OnboardingConfiguration.CADownloads(
                    pem: [], der: [], mobileconfig: [], sha256Fingerprint: Self.hostile, subject: Self.hostile,
                    notAfter: 0),
                liveViewURL: "javascript:\"><script>x</script>"))
        let request = Fixture.request(
            path, arrival: arrival, client: Self.hostile, listener: "\"><img src=x onerror=alert(1)>:80")
        let page = Fixture.body(Fixture.response(site, request))
        #expect(!page.contains("<script"))
        #expect(!page.contains("<img"))
        #expect(htmlNestingProblems(page) == [])
        if path == "/" {
            #expect(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;"))
        }
    }

    @Test("a hostile client address stays one JSON string")
    func statusEscaping() throws {
        let client = "\"},\"proxied\":false,\"x\":\"\\\n\u{1}"
        let response = Fixture.response(site, Fixture.request("/status.json", client: client))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        #expect(object["client"] as? String == client)
        #expect(object["proxied"] as? Bool == true)
        #expect(object.count == 3)
    }
}

extension OnboardingSiteTests {
    @Test("the Automatic option says which hosts the PAC file sends to the proxy")
    func pacScope() throws {
        let every = Fixture.body(Fixture.response(site, Fixture.request("/", arrival: .direct(secure: false))))
        #expect(every.contains("it sends every host to the proxy but Apple's own services"))
        let hosts = try PACHostPattern.list("api.example.com,*.b.example")
        let some = OnboardingSite(configuration: Fixture.configuration(pacHosts: hosts))
        let page = Fixture.body(Fixture.response(some, Fixture.request("/", arrival: .direct(secure: false))))
        #expect(page.contains("it sends only <code>api.example.com</code>, <code>*.b.example</code> to the proxy"))
    }
}
