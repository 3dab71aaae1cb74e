import ATSPolicy
import EventLoop
import Glibc
import LogRecord
import ProxyWire
import TLSInspection

/// A CONNECT in intercept mode, from the device's ClientHello on: the proxy's own upstream
/// handshake, shaped like an iPhone's for the host's requirements, is the one judged; then the
/// device's handshake completes with a certificate minted for its server name, and HTTP/1.1 is
/// relayed between the two sessions (``InterceptedExchanges``), one log line per request.
///
/// Upstream first: nothing of the device's handshake is answered until the verdict is known, so a
/// blocked connection fails the device's handshake with a fatal alert (``BlockStyle/abort``) as the
/// app's own would on an iPhone, or completes it to answer each request with a 403 page
/// (``BlockStyle/page``). A refused upstream handshake has no facts to judge: in enforce mode the
/// tunnel's probe path (``ConnectTunnel/judgeDeferred(upstream:)``) explains it with the permissive
/// probe and blocks; in report mode the proxy makes the permissive handshake itself, on a new
/// connection, and intercepts through it, the verdict keeping the refusal, so what such a host's
/// requests would have been is seen (report mode exists to show what would break).
///
/// One deadline, the handshake timeout from the ClientHello, covers both handshakes. Loop-confined;
/// owned by its ``ConnectTunnel``, whose session owns the client connection.
final class InterceptedTunnel {
    enum State {
        /// The proxy's handshake with the upstream: ATS-shaped, or, after `refusal` (report mode),
        /// permissive on a new connection.
        case upstreamHandshake(TLSStream, refusal: HandshakeFailure?)
        /// Report mode: the ATS-shaped handshake was refused; the permissive one's connection is
        /// being opened.
        case reconnecting(refusal: HandshakeFailure)
        /// The verdict is in; the device's handshake is under way. `blocked`: a page-style block,
        /// whose requests all get the 403 page.
        /// No `origin` for a page-style block of a server that refused the proxy's own handshake.
        case deviceHandshake(device: TLSStream, origin: TLSStream?, blocked: Verdict?)
        case relaying(InterceptedExchanges)
        /// Both legs agreed on HTTP/2 (the origin chose it, and the device was answered with it).
        case relayingHTTP2(HTTP2Relay)
        case done
    }

    unowned let tunnel: ConnectTunnel
    /// The upstream connection; nil for a page-style block with no upstream TLS behind it. Replaced
    /// once, by the permissive handshake's, in report mode.
    private(set) var upstream: (any ByteStream)?
    let upstreamAddress: SocketAddress?
    let hello: ClientHello
    /// The policy's answer for the name the device's TLS is for.
    let requirements: Requirements
    private var state: State
    private var deadline: (any LoopTimer)?
    /// Where this server's resumable session is kept, and the one offered (the facts of the full
    /// handshake that made it come with it).
    private let sessionKey: UpstreamSessionCache.Key
    private let offered: UpstreamSessionCache.Entry?
    /// The facts the verdict was taken from: kept with the session when the tunnel ends.
    private var judged: ProbeResult?
    /// The upstream's path being completed by fetching an intermediate it left out.
    private var pathCompletion: PathCompletion?

    private var owner: any TunnelOwner { tunnel.owner }
    private var settings: ProxySettings { owner.settings }
    private var client: any ByteStream { owner.client }

    init(
        tunnel: ConnectTunnel, upstream: any ByteStream, address: SocketAddress, hello: ClientHello,
        requirements: Requirements
    ) throws(TLSError) {
        self.tunnel = tunnel
        self.upstream = upstream
        upstreamAddress = address
        self.hello = hello
        self.requirements = requirements
        let context = try tunnel.owner.environment.upstreamContext(for: .ats(for: requirements))
        // The device's own server name, or none as it sent none (an IP literal).
        let stream = try TLSStream(
            role: .client(serverName: hello.serverName), context: context, transport: StreamTransport(upstream))
        // The device's own offer of what the proxy relays (h2, http/1.1): the origin chooses, and the
        // device is answered with its choice. A protocol the proxy cannot read is never offered.
        try stream.offerApplicationProtocols(Self.relayedProtocols(in: hello))
        sessionKey = UpstreamSessionCache.Key(
            host: tunnel.host, port: tunnel.port, serverName: hello.serverName, profile: .ats(for: requirements),
            address: tunnel.capturedDestination?.description)
        offered = tunnel.owner.environment.upstreamSessions?.entry(
            for: sessionKey, now: tunnel.owner.environment.clock.monotonicMilliseconds)
        if let offered { stream.offer(offered.session) }
        state = .upstreamHandshake(stream, refusal: nil)
    }

    /// The protocols of the device's ALPN offer that the proxy relays, in the device's order.
    static func relayedProtocols(in hello: ClientHello) -> [String] {
        hello.alpnProtocols.filter { $0 == "h2" || $0 == "http/1.1" }
    }

    /// A page-style block for a server whose verdict came from the probes (it refused the proxy's
    /// own handshake): the device's handshake completes with a minted leaf and each request gets
    /// the 403 page; nothing goes upstream.
    init(pageFor verdict: Verdict, tunnel: ConnectTunnel, hello: ClientHello, requirements: Requirements) {
        self.tunnel = tunnel
        upstream = nil
        upstreamAddress = nil
        self.hello = hello
        self.requirements = requirements
        sessionKey = UpstreamSessionCache.Key(
            host: tunnel.host, port: tunnel.port, serverName: hello.serverName, profile: .ats(for: requirements),
            address: tunnel.capturedDestination?.description)
        offered = nil
        state = .done
        pageVerdict = verdict
    }

    /// Set for a page-style block made without an upstream (``init(pageFor:tunnel:hello:requirements:)``).
    private var pageVerdict: Verdict?

    /// The name the device's certificate is minted for, and its requests' origin.
    private var serverName: String { hello.serverName ?? tunnel.host }

    func start() {
        tunnel.findings.inspect = .intercept
        client.setReading(false)
        deadline = owner.environment.makeTimer { [unowned self] in timedOut() }
        deadline?.schedule(after: settings.handshakeTimeout)
        if let pageVerdict { return startDeviceHandshake(origin: nil, blocked: pageVerdict) }
        watchUpstream()
    }

    /// Drives the upstream handshake from the upstream's bytes and events.
    private func watchUpstream() {
        guard let upstream else { return }
        upstream.setTimeouts(read: nil, write: nil)
        upstream.onReadable = { [unowned self] _ in advanceUpstream() }
        upstream.onEvent = { [unowned self] _, event in
            switch event {
            case .endOfStream: advanceUpstream()
            case .connected: break
            case .error, .timeout: upstreamLost(event.description)
            }
        }
        upstream.setReading(true)
        advanceUpstream()
    }

    /// Ends whatever is under way: close_notify to both peers where their sessions are sound.
    func close() {
        pathCompletion?.cancel()
        pathCompletion = nil
        deadline?.cancel()
        deadline = nil
        switch state {
        case .relaying(let exchanges):
            if let origin = exchanges.origin { keepSession(of: origin.tls) }
            exchanges.close()
        case .relayingHTTP2(let relay):
            if let origin = relay.origin { keepSession(of: origin.tls) }
            relay.close()
        default:
            break
        }
        state = .done
        upstream?.close()
    }

    // MARK: - The upstream handshake, judged

    private func advanceUpstream() {
        guard case .upstreamHandshake(let stream, let refusal) = state, let upstream else { return }
        do {
            guard try stream.handshake() == .complete else { return }
        } catch {
            upstream.onReadable = nil
            upstream.onEvent = nil
            if refusal == nil, settings.mode == .report, error.kind != .notTLS {
                return handshakePermissively(
                    after: HandshakeFailure(
                        reason: error.reason, serverClosedWithoutAlert: error.kind == .peerClosed,
                        largeHello: ClientProfile.ats(for: requirements).hello == .postQuantum))
            }
            // No facts to judge: the probes say why (the permissive one explains a refusal).
            deadline?.cancel()
            state = .done
            return tunnel.judgeDeferred(upstream: upstream)
        }
        upstream.setReading(false)
        let now = owner.environment.clock.wallSeconds
        let result: ProbeResult
        var observed: ObservedConnection
        if refusal == nil, stream.wasResumed, let offered, let full = offered.result.observed {
            // No certificates in a resumed handshake: the full one's facts (and their log form,
            // serialized once), judged as of now. The application protocol is this handshake's own:
            // ALPN is negotiated anew on resumption, from this device's list, and HTTP/2's cipher
            // rule (RFC 9113 §9.2.2) turns on it.
            observed = full
            observed.evaluationTime = now
            observed.applicationProtocol = stream.selectedApplicationProtocol
            result =
                observed.applicationProtocol == full.applicationProtocol
                ? offered.result : offered.result.replacing(observed: observed)
        } else {
            let outcome = stream.outcome(now: now)
            guard let facts = outcome.observed, let anchors = stream.trustAnchors else {
                return upstreamLost("the handshake ended without a result")
            }
            // A server that left an intermediate out: fetched as iOS fetches it, as the tunnel's probe does.
            pathCompletion = PathCompletion.start(
                facts, presented: outcome.peerCertificates, anchors: anchors, fetching: settings.fetchesIntermediates,
                source: owner.environment.intermediateSource, rules: owner.destinations
            ) { [weak self] observed in
                guard let self else { return }
                pathCompletion = nil
                judgeUpstream(
                    ProbeResult(observed: observed, atsHandshakeFailure: refusal, address: upstreamAddress), observed,
                    stream)
            }
            return
        }
        judgeUpstream(result, observed, stream)
    }

    /// Judges the upstream's facts and goes on: the device's handshake, or the block.
    private func judgeUpstream(_ result: ProbeResult, _ observed: ObservedConnection, _ stream: TLSStream) {
        guard case .upstreamHandshake = state else { return }
        owner.noteVerdictKnown()
        judged = result
        tunnel.findings.noteProbe(result)
        tunnel.findings.upstreamResumed = stream.wasResumed
        let verdict = settings.policy.verdict(
            for: requirements, observed: observed, atsHandshakeFailure: result.atsHandshakeFailure)
        if requirements.host.description == tunnel.host {
            tunnel.findings.verdict = verdict
        } else {
            tunnel.findings.serverNameVerdict = verdict
        }
        let decision = tunnel.decide(verdict, at: .deviceHandshake(pageAvailable: true))
        guard decision.proceeds else {
            tunnel.findings.action = .blocked
            guard decision == .page else {
                // As an iPhone app's connection would fail: a fatal alert to the device's hello.
                deadline?.cancel()
                state = .done
                stream.shutdown()
                return owner.respond(TLSAlertDescription.handshakeFailure.fatalRecord)
            }
            return startDeviceHandshake(origin: stream, blocked: verdict)
        }
        tunnel.findings.action = .allowed
        startDeviceHandshake(origin: stream, blocked: nil)
    }

    /// Report mode, after the ATS-shaped handshake was refused: the permissive one, on a new
    /// connection to the same address within the same deadline. Its facts, judged with the refusal,
    /// give the verdict; its session carries the device's requests. Where it cannot be made, the
    /// probes explain the refusal as in enforce mode, and the tunnel is relayed unread.
    private func handshakePermissively(after refusal: HandshakeFailure) {
        upstream?.close()
        upstream = nil
        state = .reconnecting(refusal: refusal)
        owner.dial(host: tunnel.host, port: tunnel.port, address: upstreamAddress) { [unowned self] result in
            guard case .reconnecting = state else {
                if case .success(let (connection, _)) = result { connection.close() }
                return
            }
            guard case .success(let (connection, _)) = result else {
                deadline?.cancel()
                state = .done
                return tunnel.judgeDeferred(upstream: nil)
            }
            do {
                let context = try owner.environment.upstreamContext(for: .permissive)
                let stream = try TLSStream(
                    role: .client(serverName: hello.serverName), context: context,
                    transport: StreamTransport(connection))
                try stream.offerApplicationProtocols(Self.relayedProtocols(in: hello))
                upstream = connection
                state = .upstreamHandshake(stream, refusal: refusal)
            } catch {
                connection.close()
                deadline?.cancel()
                state = .done
                return tunnel.judgeDeferred(upstream: nil)
            }
            watchUpstream()
            advanceUpstream()
        }
    }

    private func upstreamLost(_ reason: String) {
        guard case .upstreamHandshake = state else { return }
        tunnel.findings.action = .failed
        tunnel.findings.fail(FailureReason(.upstreamHandshake, "the upstream TLS handshake: \(reason)"))
        state = .done
        owner.finish()
    }

    private func timedOut() {
        switch state {
        case .upstreamHandshake, .reconnecting:
            tunnel.findings.action = .failed
            tunnel.findings.fail(
                FailureReason(
                    .upstreamTimeout,
                    "upstream did not complete the TLS handshake in \(settings.handshakeTimeout.logText)"))
        case .deviceHandshake:
            tunnel.findings.interceptFailed = "client_handshake_timeout"
            tunnel.findings.fail(
                FailureReason(
                    .clientHandshakeTimeout,
                    "the device did not complete its TLS handshake in \(settings.handshakeTimeout.logText)"))
        case .relaying, .relayingHTTP2, .done:
            return
        }
        state = .done
        owner.finish()
    }

    // MARK: - The device's handshake

    private func startDeviceHandshake(origin: TLSStream?, blocked: Verdict?) {
        let device: TLSStream
        do {
            guard
                let minted = try owner.environment.mintedServerSession(
                    serverName: hello.serverName, connectHost: tunnel.host, over: client)
            else { return upstreamLost("intercept mode has no CA") }
            device = minted
            // What the origin chose, so that both legs speak one protocol and a server's HTTP/1.1-only
            // answer is not hidden from the app. No origin (a page-style block of a server that refused
            // the proxy's handshake): the page in HTTP/1.1 when the device offers it, else in HTTP/2,
            // so that a device that speaks only h2 (a gRPC client) gets its 403 too.
            if let origin {
                device.answerApplicationProtocol(origin.selectedApplicationProtocol)
            } else if Self.relayedProtocols(in: hello) == ["h2"] {
                device.answerApplicationProtocol("h2")
            }
        } catch {
            tunnel.findings.action = .failed
            tunnel.findings.fail(FailureReason(.certificateMint, "minting a certificate for \(serverName): \(error)"))
            state = .done
            return owner.finish()
        }
        // From here the client's bytes and events, which the session hands on through the
        // tunnel, drive the handshake (``clientReadable()``, ``clientEvent(_:)``).
        state = .deviceHandshake(device: device, origin: origin, blocked: blocked)
        client.setTimeouts(read: nil, write: nil)
        client.setReading(true)
        advanceDevice()
    }

    /// Whether the client's events are this type's: while the device's handshake is under way
    /// (before it, they are the tunnel's; after it, the ``TLSByteStream``'s).
    var handlesClientEvents: Bool {
        if case .deviceHandshake = state { true } else { false }
    }

    /// The device's bytes, through its tunnel: the handshake goes on.
    func clientReadable() { advanceDevice() }

    /// The device's end, failure or timeout during its handshake.
    func clientEvent(_ event: StreamEvent) {
        switch event {
        case .endOfStream: advanceDevice()
        case .connected: break
        case .error: deviceHandshakeFailed(.reset(event.description))
        case .timeout: deviceHandshakeFailed(.timedOut)
        }
    }

    private func advanceDevice() {
        guard case .deviceHandshake(let device, let origin, let blocked) = state else { return }
        do {
            guard try device.handshake() == .complete else { return }
        } catch {
            return deviceHandshakeFailed(DeviceHandshakeFailure(error))
        }
        deadline?.cancel()
        deadline = nil
        let handshakeCompletedAt = owner.environment.clock.monotonicMilliseconds
        // The requests' one authority: the SNI (the name the proxy's own handshake sent, whose
        // certificate it checked and whose rule made the verdict), or the CONNECT host when the
        // device sent none; the CONNECT's port, the one dialled. When the SNI and the CONNECT differ,
        // only the SNI's name was proved, so a request for the CONNECT's is refused as any other.
        let requestOrigin = RequestOrigin(scheme: "https", host: serverName, port: tunnel.port)
        let deviceStream = TLSByteStream(transport: client, tls: device)
        let originStream = origin.flatMap { origin in upstream.map { TLSByteStream(transport: $0, tls: origin) } }
        if device.selectedApplicationProtocol == "h2" {
            return relayHTTP2(
                device: deviceStream, origin: originStream, requestOrigin: requestOrigin, blocked: blocked,
                handshakeCompletedAt: handshakeCompletedAt)
        }
        let exchanges = InterceptedExchanges(
            tunnel: tunnel, device: deviceStream, origin: originStream, address: upstreamAddress,
            requestOrigin: requestOrigin, blocked: blocked)
        state = .relaying(exchanges)
        exchanges.onClosedBeforeRequest = closedBeforeRequest(handshakeCompletedAt: handshakeCompletedAt)
        owner.tunnelOpened()
        exchanges.start()
    }

    /// What the relay calls when the device closes after its handshake, before any request: returns
    /// whether that was taken as the device refusing the certificate (and the tunnel ended).
    private func closedBeforeRequest(handshakeCompletedAt: Int64) -> () -> Bool {
        { [unowned self] in
            // An app that checks its pins once the handshake is done closes at once; a connection
            // opened ahead of need and dropped later says nothing of the certificate.
            let prompt =
                owner.environment.clock.monotonicMilliseconds - handshakeCompletedAt
                < settings.handshakeTimeout.milliseconds
            guard prompt else { return false }
            deviceHandshakeFailed(.closedAfterHandshake)
            return true
        }
    }

    /// Both legs speak HTTP/2 (or the device alone, for a page-style block with no origin): each
    /// stream relayed, or answered, and logged by an ``HTTP2Relay``.
    private func relayHTTP2(
        device: TLSByteStream, origin: TLSByteStream?, requestOrigin: RequestOrigin, blocked: Verdict?,
        handshakeCompletedAt: Int64
    ) {
        let relay: HTTP2Relay
        do {
            relay = try HTTP2Relay(
                tunnel: tunnel, device: device, origin: origin, address: upstreamAddress,
                requestOrigin: requestOrigin, blocked: blocked)
        } catch {
            tunnel.findings.action = .failed
            tunnel.findings.fail(FailureReason(.proxyResource, "starting HTTP/2: \(error)"))
            state = .done
            return owner.finish()
        }
        state = .relayingHTTP2(relay)
        relay.onClosedBeforeRequest = closedBeforeRequest(handshakeCompletedAt: handshakeCompletedAt)
        owner.tunnelOpened()
        relay.start()
    }

    /// The device's handshake with the minted certificate ended without a request. Only a refusal
    /// of the certificate is counted, per device and host; at the limit the host is passed through
    /// for that device from then on.
    private func deviceHandshakeFailed(_ ending: DeviceHandshakeFailure) {
        switch state {
        case .deviceHandshake: break
        case .relaying(let exchanges) where ending == .closedAfterHandshake: exchanges.close()
        case .relayingHTTP2(let relay) where ending == .closedAfterHandshake: relay.close()
        default: return
        }
        state = .done
        tunnel.findings.interceptFailed = ending.failure.rawValue
        tunnel.findings.clientAlert = ending.alert
        var words = ending.sentence(serverName: serverName, timeout: settings.handshakeTimeout)
        if ending.isCertificateRejection, let service = owner.environment.interceptService {
            let limit = settings.intercept.rejectionsBeforePassthrough
            let pair = ClientRejections.Pair(client: owner.clientAddress, host: serverName)
            if service.rejections.record(pair, limit: limit) {
                words +=
                    "; \(serverName) is passed through for \(owner.clientAddress) from now on, after \(limit) rejections"
            }
        }
        tunnel.findings.fail(FailureReason(ending.failure, words))
        owner.finish()
    }

    /// Keeps the upstream session for the next connection to this server, with the facts it was
    /// judged by; a server that declined the offered one has it forgotten.
    private func keepSession(of stream: TLSStream) {
        guard let cache = owner.environment.upstreamSessions else { return }
        // A permissive session is not kept: the next connection tries the ATS-shaped handshake again.
        guard let judged, judged.atsHandshakeFailure == nil, let resumable = stream.resumableSession else {
            if offered != nil { cache.remove(sessionKey) }
            return
        }
        cache.keep(
            resumable, result: judged, resumed: stream.wasResumed, for: sessionKey,
            now: owner.environment.clock.monotonicMilliseconds)
    }
}
