import ATSPolicy
import EventLoop
import LogRecord
import ProxyWire

/// The device's first bytes: classified (a ClientHello, whose server name may need a verdict of its
/// own, or cleartext, judged by the `cleartext` rule) before any reach the server, and nothing is
/// read from the server until they are: a server that speaks first (an SSH or SMTP banner) gets no
/// byte to the device before the device's own bytes are judged. Bytes that look like TLS but hold
/// no ClientHello the proxy can read fail closed: blocked in enforce mode (a fatal alert, then the
/// close), relayed in report mode, logged non-compliant either way with the reason in
/// `hello_unreadable`.
extension ConnectTunnel {
    /// The upstream is connected: 200 to the device (none to a captured connection, which sent no
    /// CONNECT), then its first bytes are awaited.
    func established(_ upstream: any ByteStream) {
        if capturedDestination == nil {
            client.write(ProxyResponse.connectionEstablished)
            owner.noteEstablished()
        }
        // The device's first bytes (its ClientHello) are due as promptly as a request head.
        inspection.establishedAt = owner.environment.clock.monotonicMilliseconds
        client.setTimeouts(read: settings.headTimeout, write: settings.idleTimeout)
        attach(upstream)
        // Whatever the server sends waits in its socket until the device's bytes are judged, unless
        // the cleartext rule judges a server that speaks first at once (``upstreamSpokeFirst(_:)``).
        upstream.setReading(judgesServerFirstBytes)
        state = .classifying(upstream: upstream)
        client.setReading(true)
        // Bytes sent right behind the CONNECT head are already buffered.
        if client.availableBytes > 0 { classifyHeldBytes() }
    }

    /// The upstream's own limits are off: until relaying starts the device's deadline bounds the
    /// tunnel, then the idle timer watches both sides together.
    func attach(_ upstream: any ByteStream) {
        upstream.setTimeouts(read: nil, write: nil)
        upstream.onReadable = { [unowned self] _ in relayDown() }
        upstream.onEvent = { [unowned self] _, event in upstreamEvent(event) }
    }

    /// Whether bytes the server sends before the device are judged at once, by the `cleartext`
    /// rule: where it lets them through (``acceptsCleartext``), or in report mode for a server the
    /// probe found speaking cleartext. A TLS server never speaks first; other servers wait.
    var judgesServerFirstBytes: Bool {
        acceptsCleartext || (settings.mode == .report && inspection.upstreamSpeaksCleartext != nil)
    }

    /// The server spoke before the device (an SSH or SMTP banner): cleartext, judged by the
    /// `cleartext` rule now, and relayed when it allows it. If the device has begun to speak, its
    /// own bytes decide instead, and the server's wait.
    func upstreamSpokeFirst(_ upstream: any ByteStream) {
        guard client.availableBytes == 0, let http = try? owner.lookUpRequirements(for: host, scheme: .http) else {
            return upstream.setReading(false)
        }
        let verdict = settings.policy.verdict(for: http, observed: nil)
        findings.tunnelProtocol = .cleartext
        findings.scheme = .http
        findings.requirements = http
        findings.verdict = verdict
        findings.action = .allowed
        startRelaying(upstream)
    }

    func classifyHeldBytes() {
        guard case .classifying(let upstream) = state else { return }
        let held = client.peek(maximum: TunnelInspection.maximumHeldBytes)
        var scanned = inspection.clientScanner.feed(held.dropFirst(inspection.heldBytesScanned))
        inspection.heldBytesScanned = held.count
        if scanned == .needMoreData, inspection.clientEnded {
            scanned = inspection.clientScanner.finish()
        }
        if scanned == .needMoreData, held.count >= TunnelInspection.maximumHeldBytes {
            return helloUnreadable(
                "no complete ClientHello in the first \(TunnelInspection.maximumHeldBytes) bytes", alert: .decodeError,
                upstream: upstream)
        }
        switch scanned {
        case .needMoreData:
            awaitMoreHeldBytes()
        case .notTLS:
            // A device that got its 200 and hung up without a word sent nothing to judge.
            if held.isEmpty { return owner.finish() }
            cleartextInTunnel(firstBytes: held, upstream: upstream)
        case .clientHello(let hello):
            clientHelloSeen(hello, upstream: upstream)
        case .failed(let reason):
            helloUnreadable(reason, alert: inspection.clientScanner.failureAlert ?? .decodeError, upstream: upstream)
        case .serverHello:
            startRelaying(upstream)  // Not reported in this direction.
        }
    }

    /// Waits for the rest of the device's first bytes until what is left of their deadline.
    private func awaitMoreHeldBytes() {
        guard !inspection.clientEnded else { return }
        let left =
            settings.headTimeout.milliseconds
            - (owner.environment.clock.monotonicMilliseconds - inspection.establishedAt)
        guard left > 0 else { return firstBytesTimedOut() }
        client.setTimeouts(read: .milliseconds(left), write: settings.idleTimeout)
    }

    func firstBytesTimedOut() {
        // Bytes held at the deadline began a ClientHello (anything else is decided at its first byte).
        if client.availableBytes > 0, case .classifying(let upstream) = state {
            return helloUnreadable(
                "the ClientHello was not complete within \(settings.headTimeout.logText)", alert: .decodeError,
                upstream: upstream)
        }
        var reason = "closed: the device sent no ClientHello or request within \(settings.headTimeout.logText)"
        if inspection.upstreamSpeaksCleartext != nil {
            reason += " (the server speaks first; what it sent waits until the device's first bytes are judged)"
        }
        findings.fail(FailureReason(.helloTimeout, reason))
        owner.finish()
    }

    /// The device's bytes look like TLS but hold no ClientHello the proxy can read, so there is
    /// nothing to judge: the server's name, the device's offer and the server's own verdict are all
    /// unknown for this connection. Fails closed: in enforce mode nothing reaches the server, and the
    /// device gets the fatal `alert` a TLS server would send for the fault (there is no way to say
    /// 403 inside TLS), then the close. In report mode the bytes are relayed. Logged non-compliant
    /// either way, with `reason` as `hello_unreadable`.
    private func helloUnreadable(_ reason: String, alert: TLSAlertDescription, upstream: any ByteStream) {
        findings.tunnelProtocol = .tls
        findings.helloUnreadable = reason
        guard settings.mode == .report else {
            findings.action = .blocked
            return owner.respond(alert.fatalRecord)
        }
        findings.action = .allowed
        startRelaying(upstream)
    }

    /// The device speaks cleartext through the tunnel: what ATS decides for http:// to this host.
    private func cleartextInTunnel(firstBytes: [UInt8], upstream: any ByteStream) {
        if interceptPlanned {
            findings.inspect = .passthrough
            findings.passthrough = .notTLS
        }
        guard let http = try? owner.lookUpRequirements(for: host, scheme: .http) else { return owner.finish() }
        findings.tunnelProtocol = .cleartext
        findings.scheme = .http
        let verdict = settings.policy.verdict(for: http, observed: nil)
        findings.requirements = http
        findings.verdict = verdict
        // An HTTP request gets Apple's words for it; other protocols are just cut off.
        let isHTTPRequest = RequestLineDetection.startsWithRequestLine(firstBytes.prefix(8192))
        switch decide(verdict, at: .cleartextInTunnel(isHTTPRequest: isHTTPRequest)) {
        case .allow, .report:
            break
        case .cutOff:
            findings.action = .blocked
            return owner.finish()
        case .respond403, .alert, .page:
            findings.action = .blocked
            return owner.respond(ProxyResponse.cleartextBlocked(verdict, host: host))
        }
        findings.action = .allowed
        startRelaying(upstream)
    }

    private func clientHelloSeen(_ hello: ClientHello, upstream: any ByteStream) {
        findings.tunnelProtocol = .tls
        findings.serverNameIndication = hello.serverName
        if let reason = inspection.upstreamSpeaksCleartext {
            findings.action = .failed
            findings.fail(
                FailureReason(.serverNotTLS, "the device started TLS, but the server does not speak TLS: \(reason)"))
            return owner.finish()
        }
        if interceptPlanned { return interceptOrPass(hello, upstream: upstream) }
        // (The usual case, the CONNECT's own name, needs no second policy lookup.) In a tunnel opened
        // before any verdict, only the name the device's TLS is for is judged: the CONNECT's host
        // was never the one its handshake would have been with.
        guard let name = hello.serverName, name != host,
            let named = try? owner.lookUpRequirements(for: name, scheme: .https), named.host != requirements.host
        else { return verdictDeferred ? judgeDeferred(upstream: upstream) : startRelaying(upstream) }
        judgeServerName(name, requirements: named, upstream: upstream)
    }
}

/// Intercept mode's choice, once the ClientHello is read.
extension ConnectTunnel {
    /// Intercepts the device's TLS, unless its hello or its server name says not to: a name the
    /// policy pins or `--passthrough` names, or an ALPN offer with neither http/1.1 nor h2, which go
    /// through as a tunnel judged by the probe.
    func interceptOrPass(_ hello: ClientHello, upstream: any ByteStream) {
        var named = requirements
        if let name = hello.serverName, name != host,
            let forName = try? owner.lookUpRequirements(for: name, scheme: .https)
        {
            named = forName
        }
        var reason: PassthroughReason?
        if let service = owner.environment.interceptService, let name = hello.serverName, name != host {
            reason = passthroughReason(for: name, requirements: named, service: service)
        }
        if reason == nil, !hello.alpnProtocols.isEmpty,
            !hello.alpnProtocols.contains(where: { $0 == "http/1.1" || $0 == "h2" })
        {
            reason = .noHTTP1ALPN
        }
        if let reason {
            findings.inspect = .passthrough
            findings.passthrough = reason
            if let name = hello.serverName, name != host, named.host != requirements.host {
                return judgeServerName(name, requirements: named, upstream: upstream)
            }
            return judgeDeferred(upstream: upstream)
        }
        guard let address = upstreamAddress else { return judgeDeferred(upstream: upstream) }
        let intercepted: InterceptedTunnel
        do {
            intercepted = try InterceptedTunnel(
                tunnel: self, upstream: upstream, address: address, hello: hello, requirements: named)
        } catch {
            findings.action = .failed
            findings.fail(FailureReason(.upstreamHandshake, "starting the upstream TLS handshake: \(error)"))
            return owner.finish()
        }
        interceptedHello = (hello, named)
        state = .intercepting(intercepted)
        intercepted.start()
    }
}
