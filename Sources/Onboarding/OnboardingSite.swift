import ProxyWire

/// The site the proxy answers as ``OnboardingHost/name`` (through the proxy, http and https) and at
/// its own listening address (requests sent to it as to a web server). Routes:
///
/// | path | answer |
/// |---|---|
/// | `/` | the onboarding page (``OnboardingPage``) |
/// | `/check` | whether the CA is trusted (``CheckPage``) |
/// | `/ca.mobileconfig`, `/ca.pem`, `/ca.cer` | the CA as an iOS profile, PEM and DER (404 without a CA) |
/// | `/proxy.pac` | the PAC script (``ProxyAutoConfig``) for the listener the request came to |
/// | `/status.json` | `{"proxied":…,"secure":…,"client":…}` (``StatusJSON``) |
///
/// Every route answers every arrival alike (the pages word themselves by it): iOS fetches a PAC URL
/// over HTTPS before HTTP, and Safari may upgrade `atsproxy.test` to https.
///
/// It answers GET and HEAD (the same response: the serving connection leaves out a HEAD's body),
/// 405 with `Allow` for other methods, and 404 naming the path for other paths. Every response
/// carries `X-ATSProxy: onboarding`, so a client can tell the proxy answered, and
/// `Cache-Control: no-store`. It never blocks: the QR codes are drawn once, here.
package struct OnboardingSite: LocalSite, Sendable {
    package let configuration: OnboardingConfiguration
    /// `http://<address>/` and its QR code as SVG, per configured address.
    let codes: [(url: String, svg: String)]
    /// The WireGuard app's App Store link as a QR code (SVG), when the page offers the tunnel.
    let wireguardAppCode: String?

    /// The header every response carries.
    package static let marker = (name: "X-ATSProxy", value: "onboarding")

    package init(configuration: OnboardingConfiguration) {
        self.configuration = configuration
        codes = configuration.addresses.map { address in
            let url = "http://\(address)/"
            // A QR code holds thousands of bytes: a host:port that does not fit is no address.
            return (url, (try? QRCode(url))?.svg(modulePixels: 6) ?? "")
        }
        wireguardAppCode = configuration.wireguard.flatMap { _ in
            (try? QRCode(OnboardingConfiguration.WireGuardOffer.appStoreURL))?.svg(modulePixels: 5)
        }
    }

    package func reply(to request: LocalRequest) -> LocalReply {
        var response = respond(to: request)
        response.headers.append(Self.marker)
        return .response(response)
    }

    private func respond(to request: LocalRequest) -> LocalResponse {
        guard request.method == "GET" || request.method == "HEAD" else {
            return .methodNotAllowed(request.method)
        }
        switch request.path {
        case "/":
            return .html(
                OnboardingPage(
                    configuration: configuration, codes: codes, wireguardAppCode: wireguardAppCode, request: request
                ).html)
        case "/check": return .html(CheckPage(request: request).html)
        case "/status.json": return .json(StatusJSON.text(for: request))
        case "/proxy.pac": return proxyAutoConfig(for: request)
        case "/ca.mobileconfig":
            return download(
                \.mobileconfig, type: "application/x-apple-aspen-config", extension: "mobileconfig", request)
        case "/ca.pem": return download(\.pem, type: "application/x-pem-file", extension: "pem", request)
        case "/ca.cer": return download(\.der, type: "application/pkix-cert", extension: "cer", request)
        default: return .notFound(request.path)
        }
    }

    /// One of the CA's forms as an attachment, its bytes unchanged; without a CA, 404 saying how to make one.
    private func download(
        _ form: KeyPath<OnboardingConfiguration.CADownloads, [UInt8]>, type: String, extension: String,
        _ request: LocalRequest
    ) -> LocalResponse {
        guard let authority = configuration.authority else {
            return .text(
                "atsproxy has no CA to download at \(request.path).\n\(HowTo.makeCA)\n", status: 404,
                reason: "Not Found")
        }
        return LocalResponse(
            contentType: type, body: authority[keyPath: form],
            headers: [("Content-Disposition", "attachment; filename=\"atsproxy-ca.\(`extension`)\"")])
    }

    /// The PAC script for the listener the device reached: `?hosts=` (comma-separated) picks the
    /// proxied hosts, else the configured ones, else every host. A bad pattern is a 400 naming it.
    private func proxyAutoConfig(for request: LocalRequest) -> LocalResponse {
        var hosts = configuration.pacHosts
        if let list = request.queryValue("hosts") {
            do {
                hosts = try PACHostPattern.list(list)
            } catch {
                return .text("\(error.description)\n", status: 400, reason: "Bad Request")
            }
        }
        let script = ProxyAutoConfig(proxy: request.listener, onlyHosts: hosts).script
        return LocalResponse(contentType: "application/x-ns-proxy-autoconfig", body: Array(script.utf8))
    }
}
