import ProxyWire

/// The onboarding page (`/`): three steps (use the proxy, trust the CA, check), QR codes of the
/// proxy's onboarding URLs, and notes for simulators and emulators. What it says depends on the
/// request: step 1 shows as done only for a request that came through the proxy.
struct OnboardingPage {
    let configuration: OnboardingConfiguration
    /// The QR codes of `http://<address>/`, one per configured address, drawn once.
    let codes: [(url: String, svg: String)]
    /// The WireGuard app's QR code, when the proxy runs a tunnel (``OnboardingConfiguration/wireguard``).
    let wireguardAppCode: String?
    let request: LocalRequest

    var html: String {
        var body = "<h1>atsproxy: set up this device</h1>\n"
        body += useTheProxy + trustTheCA + check + otherDevices + wireguard + simulators
        if let live = configuration.liveViewURL {
            body += "<p>What the proxy sees, live: <a href=\"\(HTML.escaped(live))\">\(HTML.escaped(live))</a></p>\n"
        }
        return HTML.document(title: "atsproxy: set up this device", body: body)
    }

    private var isProxied: Bool {
        if case .proxied = request.arrival { return true }
        return false
    }

    /// Step 1: done for a proxied request; otherwise how to set the proxy, with this listener's
    /// address (the one the device just reached).
    private var useTheProxy: String {
        let client = HTML.escaped(request.client)
        guard !isProxied else {
            return """
                <section class="ok"><h2>1. You are connected ✓</h2>
                <p>This page came through atsproxy: this device uses it as its proxy. The proxy sees it as <code>\(client)</code>.</p>
                </section>

                """
        }
        let listener = ListenerAddress(request.listener)
        let address = HTML.escaped(request.listener)
        return """
            <section class="todo"><h2>1. Use the proxy</h2>
            <p>This device (<code>\(client)</code>) reaches atsproxy at <code>\(address)</code>, but is not using it as its proxy yet.</p>
            <p>On the iPhone: Settings → Wi-Fi → (i) next to this network → Configure Proxy, then either</p>
            <ul>
            <li><strong>Manual</strong>: Server <code>\(HTML.escaped(listener.host))</code>, Port <code>\(HTML.escaped(listener.port))</code>, Authentication off; or</li>
            <li><strong>Automatic</strong>: URL <code>http://\(address)/proxy.pac</code> (\(pacScope)).</li>
            </ul>
            <p>Tap Save, then open <a href="http://\(OnboardingHost.name)/">http://\(OnboardingHost.name)/</a>: there this step shows as done.</p>
            <p>Settings seem ignored? Turn off any VPN; on iOS 16, forget the network and join it again.</p>
            </section>

            """
    }

    /// Which hosts the PAC file sends to the proxy, and how to choose others.
    private var pacScope: String {
        let query = "<code>?hosts=api.example.com,*.example.net</code>"
        guard !configuration.pacHosts.isEmpty else {
            return "it sends every host to the proxy but Apple's own services; add \(query) to send only those hosts"
        }
        let hosts = configuration.pacHosts.map { "<code>\(HTML.escaped($0.description))</code>" }.joined(
            separator: ", ")
        return "it sends only \(hosts) to the proxy; \(query) picks other hosts"
    }

    /// Step 2: the CA's downloads and the two switches, or why none is needed, or how to make one.
    private var trustTheCA: String {
        var text = "<section><h2>2. Trust the atsproxy CA</h2>\n"
        if configuration.inspectMode == .tunnel {
            text += """
                <p>atsproxy runs in <strong>tunnel</strong> mode: it judges TLS handshakes without decrypting them, \
                so this device needs no CA. The CA is only needed for intercept mode (<code>--inspect intercept</code>).</p>

                """
        }
        guard let authority = configuration.authority else {
            return text + "<p>\(HTML.withCode(HowTo.makeCA))</p>\n</section>\n\n"
        }
        let subject = HTML.escaped(authority.subject)
        text += """
            <p><a class="button" href="/ca.mobileconfig">Install the profile (iPhone)</a> \
            <a href="/ca.pem">ca.pem</a> · <a href="/ca.cer">ca.cer (DER)</a></p>
            <p>CA <code>\(subject)</code>, valid until \(UTCDate.day(authority.notAfter)).<br>
            SHA-256 <span class="mono">\(HTML.escaped(authority.sha256Fingerprint))</span></p>
            <ol>
            <li>Tap <em>Install the profile</em> in Safari (other browsers may not offer to install it) and allow the download.</li>
            <li>Settings → <em>Profile Downloaded</em> (or General → VPN &amp; Device Management) → Install. \
            iOS calls it “Not Verified”: the profile is not signed.</li>
            <li><strong>The step people miss:</strong> Settings → General → About → Certificate Trust Settings → \
            switch on full trust for <code>\(subject)</code>. Since iOS 10.3 an installed CA is not trusted \
            for HTTPS until this switch is on; without it, apps fail as if they pinned their certificates.</li>
            </ol>
            </section>

            """
        return text
    }

    /// Step 3: the https page that loads only when the CA is trusted.
    private var check: String {
        let url = "https://\(OnboardingHost.name)/check"
        guard configuration.authority != nil else {
            return """
                <section><h2>3. Check</h2>
                <p>Without a CA there is no HTTPS to check: step 1 is the check.</p>
                </section>

                """
        }
        return """
            <section><h2>3. Check</h2>
            <p>Open <a href="\(url)">\(url)</a>. It loads only through the proxy with the CA trusted; a certificate \
            warning means the trust switch of step 2 is off.</p>
            <p>Safari may turn a typed <code>\(OnboardingHost.name)</code> into https: until the CA is trusted, \
            type <code>http://\(OnboardingHost.name)/</code> in full.</p>
            </section>

            """
    }

    /// The onboarding URLs as QR codes, for a second phone or when this page is on a laptop.
    private var otherDevices: String {
        var text = "<section><h2>Another device</h2>\n"
        guard !codes.isEmpty else {
            return text + "<p>\(HTML.withCode(HowTo.listenOnLAN))</p>\n</section>\n\n"
        }
        text += "<p>Scan with the iPhone's camera to open this page there:</p>\n"
        for code in codes {
            text +=
                "<figure>\(code.svg)<figcaption><a href=\"\(HTML.escaped(code.url))\">\(HTML.escaped(code.url))</a></figcaption></figure>\n"
        }
        return text + "</section>\n\n"
    }

    /// The second way in, when the proxy runs a WireGuard tunnel: every app, on any network. The
    /// device's own configuration holds its private key, so it is never on this page: the proxy's
    /// operator makes it (`atsproxyctl wireguard add-device`) and the page says how.
    private var wireguard: String {
        guard let offer = configuration.wireguard else { return "" }
        let code = wireguardAppCode.map { svg in
            let url = HTML.escaped(OnboardingConfiguration.WireGuardOffer.appStoreURL)
            return "<figure>\(svg)<figcaption><a href=\"\(url)\">The WireGuard app</a></figcaption></figure>\n"
        }
        return """
            <section><h2>Or: every app, on any network, through WireGuard</h2>
            <p>This proxy also runs a WireGuard tunnel at <code>\(HTML.escaped(offer.endpoint))</code> (UDP). Through it, \
            every app's connections are judged, whether or not it uses the proxy setting, on Wi-Fi or cellular, \
            and each line names the device.</p>
            <ol><li>Install the WireGuard app (scan the code with the camera).</li>
            <li>On the proxy's machine, make this device's tunnel: <code>atsproxyctl wireguard add-device NAME</code>. \
            In the app, tap <em>Add a tunnel → Create from QR code</em> and scan the code it prints, or open the \
            <code>NAME.mobileconfig</code> it writes, which installs the tunnel and the atsproxy CA at once.</li>
            <li>Trust the CA (step 2), and turn the tunnel on in the app.</li></ol>
            \(code ?? "")</section>

            """
    }

    /// Simulators and emulators take their proxy from elsewhere than a Wi-Fi panel.
    private var simulators: String {
        let address = HTML.escaped(request.listener)
        return """
            <section><h2>Simulators and emulators</h2>
            <p><strong>iOS Simulator</strong> uses the Mac's network settings: on the Mac, System Settings → Network → \
            the active service → Details → Proxies → Web proxy (HTTP) and Secure web proxy (HTTPS): <code>\(address)</code> \
            (or Automatic proxy configuration with <code>http://\(address)/proxy.pac</code>). Trust the CA in the booted \
            simulator with <code>xcrun simctl keychain booted add-root-cert ca.pem</code> (ca.pem from the link above).</p>
            <p><strong>Android emulator</strong>: start it with <code>emulator -avd NAME -http-proxy http://\(address)</code>, \
            or set a running one with <code>adb shell settings put global http_proxy \(address)</code> \
            (undo with <code>adb shell settings put global http_proxy :0</code>).</p>
            </section>

            """
    }
}
