import ATSPolicy
import EventLoop
import ProxyWire
import TLSInspection

/// The proxy's own pages on a proxy listener: `http://atsproxy.test/…` through the proxy, a
/// browser pointed at the listener's own address, and TLS to either (``SiteTLSConnection``). None of
/// these is a connection the device's app makes, so none is judged or logged.
extension ClientSession {
    /// The origin a client's heads are read against: origin-form targets (`GET /`, a browser sent
    /// straight to the listener) are taken, made absolute against the onboarding host, and marked
    /// (``RequestHead/arrivedInOriginForm``).
    static let headOrigin = RequestOrigin(scheme: "http", host: OnboardingHost.name, port: 80)

    /// How `head` reaches the proxy's own pages, or nil when it is a request to proxy.
    func siteArrival(of head: RequestHead) -> LocalRequest.Arrival? {
        siteArrival(of: head.target, originForm: head.arrivedInOriginForm)
    }

    /// Whether a refused head was one for the proxy's own pages (a page request, or a CONNECT to
    /// the onboarding host), which are not logged when they complete either.
    func isForPages(_ refused: RefusedRequestLine) -> Bool {
        if case .authority(let host, _) = refused.target, refused.method == "CONNECT" {
            return Self.isOnboardingHost(host)
        }
        return siteArrival(of: refused.target, originForm: refused.arrivedInOriginForm) != nil
    }

    /// How a request for `target` reaches the proxy's own pages, or nil when it is one to proxy.
    private func siteArrival(of target: RequestTarget, originForm: Bool) -> LocalRequest.Arrival? {
        if originForm { return .direct(secure: false) }
        guard case .absolute("http", let host, let port, _) = target else { return nil }
        if Self.isOnboardingHost(host) { return .proxied(secure: false) }
        // A device already using the proxy that opens the proxy's own address (the QR code's URL)
        // sends it to the proxy: that is a request for the pages, not a loop to refuse.
        if let address = IPAddress(host), case .proxyItself? = destinations.vet(address, port: port ?? 80),
            localAddress()?.port == port ?? 80
        {
            return .proxied(secure: false)
        }
        return nil
    }

    /// The onboarding host, with or without the trailing dot of an absolute name.
    static func isOnboardingHost(_ host: String) -> Bool {
        host == OnboardingHost.name || host == OnboardingHost.name + "."
    }

    /// How many bytes of page answers may wait for a client before its next request is read: a
    /// client that pipelines requests and reads nothing holds no more than this.
    static let pageBacklog = 64 * 1024

    /// The address the client reached the proxy at, as `host:port` for the pages and the PAC file
    /// (an IPv4 client of a dual-stack listener in IPv4 form, as the device dialled it).
    var listenerText: String {
        localAddress().map { address in
            let host = address.withAddressBytes { IPAddress(networkBytes: $0) }?.unmapped
            return host.map { "\(HostIdentity.address($0).urlForm):\(address.port)" } ?? address.description
        } ?? "127.0.0.1"
    }

    /// Answers one request for the proxy's pages, then waits for the client's next request (which
    /// may be one to proxy) as after any keep-alive exchange.
    func serveSite(_ head: RequestHead, arrival: LocalRequest.Arrival) {
        guard let site = settings.onboarding else {
            return respond(ProxyResponse.text(status: 404, reason: "Not Found", body: "this proxy serves no pages\n"))
        }
        let framing = try? head.bodyFraming()
        guard framing == BodyFraming.none || framing == .contentLength(0) else {
            return respond(
                ProxyResponse.text(
                    status: 413, reason: "Content Too Large", body: "atsproxy's pages take no request body\n"))
        }
        guard case .absolute(_, _, _, let pathAndQuery) = head.target else { return }
        let request = LocalRequest(
            method: head.method, pathAndQuery: pathAndQuery, headers: head.headers, client: deviceAddress,
            arrival: arrival,
            listener: listenerText)
        let response: LocalResponse
        switch site.reply(to: request) {
        case .response(let answer): response = answer
        case .eventStream: response = .notFound(request.path)  // Streams are the web listener's.
        }
        let keepAlive = head.isKeepAlive && !environment.isDraining && !clientEnded
        client.write(response.serialized(headOnly: head.method == "HEAD", keepAlive: keepAlive))
        guard keepAlive else { return closeAfterFlush(within: settings.idleTimeout) }
        // The next request is read on a later turn of the loop, not from here: a thousand
        // pipelined requests must not become a thousand nested calls.
        awaitHead(.nextRequest, readingBuffered: false)
        guard case .head = reader else { return }
        if client.pendingOutputBytes > Self.pageBacklog {
            // Answers pile up unread: read nothing more until they are taken.
            client.setReading(false)
            reader = .backlogged
            awaitClientDrained(to: 0)
        } else if client.availableBytes > 0 {
            client.noteReadable()
        }
    }

    /// The client's address as the pages show it: an IPv4 client of a dual-stack listener in IPv4 form.
    var deviceAddress: String { IPAddress(clientAddress)?.unmapped.description ?? clientAddress }

    /// `CONNECT atsproxy.test:port`: the pages over TLS, with a leaf the proxy's CA mints for the
    /// onboarding host (so a trusted CA shows at `https://atsproxy.test/check`, and Safari's
    /// upgrade of the typed name to https works).
    func connectToSite(port: UInt16) {
        guard settings.onboarding != nil, environment.leafSource != nil else {
            return respond(
                ProxyResponse.text(
                    status: 503, reason: "Service Unavailable",
                    body: "atsproxy has no CA, so it cannot answer https://\(OnboardingHost.name): make one with "
                        + "`atsproxyctl ca init` and restart the proxy, or use http://\(OnboardingHost.name)/\n"))
        }
        client.write(ProxyResponse.connectionEstablished)
        startSiteTLS(serverName: OnboardingHost.name, arrival: .proxied(secure: true))
    }

    /// Whether TLS straight to the listener is answered: with pages and a CA to mint their leaf.
    /// Without them a ClientHello is a bad request head (400), and the client falls back to http
    /// (as iOS does for a PAC URL).
    var servesPagesOverTLS: Bool { settings.onboarding != nil && environment.leafSource != nil }

    /// TLS straight to the listener: the pages over TLS with a leaf for the address the client
    /// reached (an IP SAN).
    func startDirectTLS() {
        let host = listenerText
        let name =
            host.hasPrefix("[") ? String(host.dropFirst().prefix { $0 != "]" }) : String(host.prefix { $0 != ":" })
        startSiteTLS(serverName: nil, connectHost: name, arrival: .direct(secure: true))
    }

    private func startSiteTLS(
        serverName: String?, connectHost: String = OnboardingHost.name, arrival: LocalRequest.Arrival
    ) {
        guard let site = settings.onboarding else { return finish() }
        // No CA, or no leaf: the client sees its handshake end, as with a server it cannot use.
        guard
            let tls = try? SiteTLSConnection(
                session: self, site: site, serverName: serverName, connectHost: connectHost, arrival: arrival)
        else { return finish() }
        reader = .site(tls)
        tls.start()
    }
}
