import ATSPolicy
import EventLoop
import LogRecord
import ProxyWire
import TLSInspection

/// One client connection, from its first request head to its close. Loop-confined.
///
/// The session reads request heads and routes each: `CONNECT` to a ``ConnectTunnel``, absolute-form `http://` to a
/// ``PlainHTTPExchange``, anything else to a 400. A keep-alive client comes back here for its next
/// head once an exchange is over. Every request or tunnel leaves one ``ConnectionRecord`` in the log.
final class ClientSession: ExchangeOwner, TunnelOwner {
    let id: UInt64
    unowned let environment: any SessionEnvironment
    let client: any ByteStream
    let peer: String
    /// The client's address without its port, as the proxy's refusals name it.
    let clientAddress: String
    /// Where this client may be connected (``DestinationRules``): judged once, with the settings.
    let destinations: DestinationRules
    /// Whether `--allow-client` admits this client.
    let allowed: Bool
    /// The ATS client the listener this client came through stands for.
    let clientClass: ClientClass
    /// How the client reached the proxy: its proxy setting, or a firewall's redirect.
    let capture: SessionCapture
    /// The WireGuard peer the client is (``DeviceNames``), named on each of its lines.
    let device: String?
    /// The client's IP address (nil: not an IP socket).
    let clientIP: IPAddress?
    /// A captured TLS connection's server name, checked against the address the device dialled;
    /// the line waits for it (``writeRecord()``).
    var serverNameCheck: ServerNameCheck?
    /// The policy, mode and limits as they were when the client connected: a session is judged by
    /// one set from start to end.
    let settings: ProxySettings
    /// The environment's clock, read for every timing the session logs.
    var clock: any SessionClock { environment.clock }

    /// The record of the request or tunnel in progress; written to the log when it ends.
    var record: ConnectionRecord?
    /// Who handles the client's bytes now (``ClientReader``): the client's callbacks, set once in
    /// ``start()``, dispatch on it. Set only by the session's own files, where it hands the client on.
    var reader = ClientReader.none
    /// Watches a tunnel, an exchange or a keep-alive client for the idle timeout; made on first use.
    private var idleTimer: (any IdleWatch)?
    /// The client half-closed: what it has sent is answered, then the connection closes.
    var clientEnded = false
    private var finished = false

    /// The CONNECT in progress: the last thing a session does.
    var tunnel: ConnectTunnel? { if case .tunnel(let tunnel) = reader { tunnel } else { nil } }
    /// The proxy's address as this client reached it (the listener's, or the interface's for a
    /// wildcard listener): what the onboarding pages and PAC file tell the device to use.
    var localAddress: () -> SocketAddress? = { nil }

    // The plain-HTTP path's state.
    var exchange: PlainHTTPExchange? { if case .exchange(let exchange) = reader { exchange } else { nil } }
    /// An origin connection kept open after a keep-alive exchange, for the client's next request.
    var idleOrigin: IdleOrigin?
    /// The upstream or origin connection being opened, cancelled if the session ends first.
    var originDial: (any UpstreamDial)?

    /// - Parameter address: the client's IP address (nil when the peer is not an IP socket).
    init(
        id: UInt64, environment: any SessionEnvironment, client: any ByteStream, peer: String, address: IPAddress?,
        allowed: Bool,
        clientClass: ClientClass, capture: SessionCapture = .proxy, device: String? = nil
    ) {
        self.id = id
        self.capture = capture
        self.device = device
        clientIP = address
        self.environment = environment
        self.client = client
        self.peer = peer
        self.allowed = allowed
        self.clientClass = clientClass
        let settings = environment.settings
        self.settings = settings
        clientAddress = address?.description ?? peer
        destinations = DestinationRules(
            client: address, allowedDestinations: settings.allowedDestinations,
            listeners: environment.listeningAddresses)
    }

    func start() {
        // The one place the client's callbacks are set: who handles them is ``reader``.
        client.onReadable = { [unowned self] _ in clientReadable() }
        client.onEvent = { [unowned self] _, event in clientEvent(event) }
        guard allowed else {
            // Refused before anything is read: the proxy takes no request from a client it does
            // not serve, so the line's method and host are "-".
            let reason = "client \(peer) is not allowed to use this proxy (see --allow-client)"
            record = ConnectionRecord(
                startedAt: environment.clock.wallMilliseconds, client: peer, method: "-", scheme: .http, host: "-",
                port: 0,
                action: .denied)
            record?.fail(FailureReason(.clientDenied, reason))
            client.setTimeouts(read: settings.headTimeout, write: settings.headTimeout)
            // A captured device dialled a server and may be starting TLS: it reads no HTTP, and
            // sees a server that reset its connection.
            if case .proxy = capture {
                respond(ProxyResponse.text(status: 403, reason: "Forbidden", body: reason + "\n"))
            } else {
                closeAfterFlush(within: settings.headTimeout, then: .reset)
            }
            return
        }
        if refuseUnredirected() { return }
        // A client sends its request head with its connection: it is usually here already, and
        // reading it now saves a trip through the loop.
        client.readImmediately()
        awaitHead(.firstRequest)
    }

    // MARK: - Who reads the client

    /// The client's bytes go to whoever ``reader`` says.
    private func clientReadable() {
        switch reader {
        case .head: readHead()
        case .exchange(let exchange): exchange.clientReadable()
        case .tunnel(let tunnel): tunnel.clientReadable()
        case .site(let site): site.clientReadable()
        case .capturedHello: if let original = capturedDestination { readCapturedHello(original) }
        case .lingering: dropLingering()
        case .none, .backlogged, .closing: return  // Left in the input, unread.
        }
    }

    private func clientEvent(_ event: StreamEvent) {
        switch reader {
        case .head(let headReader): headEvent(event, reading: headReader)
        case .backlogged: headEvent(event, reading: nil)
        case .exchange(let exchange): exchange.clientEvent(event)
        case .tunnel(let tunnel): tunnel.clientEvent(event)
        case .site(let site): site.clientEvent(event)
        case .capturedHello: if let original = capturedDestination { capturedHelloEnded(original, event) }
        case .none:
            // Whoever reads next acts on the end; nothing else can wait.
            if event == .endOfStream { clientEnded = true } else { finish() }
        case .closing:
            // A client that half-closed after its request still reads the answer.
            if event != .endOfStream { finish() }
        case .lingering:
            finish()  // The client's close, a read timeout or an error: done.
        }
    }

    /// Runs ``clientDrained()`` once the client's output falls to `mark` bytes, for the current reader.
    ///
    /// The client's drained callback is set only while a drain is awaited, and always to the same
    /// dispatch: a stream with one set reports every write that empties its output.
    func awaitClientDrained(to mark: Int) {
        client.onDrained = { [unowned self] _ in clientDrained() }
        client.setDrainedMark(mark)
    }

    private func clientDrained() {
        client.onDrained = nil
        switch reader {
        case .closing(let end): flushed(then: end)
        case .backlogged:
            // The answers are taken: the next head is read, as after any page.
            reader = .head(newHeadReader)
            client.setReading(true)
            if client.availableBytes > 0 { client.noteReadable() }
        case .exchange(let exchange): exchange.clientDrained()
        case .tunnel(let tunnel): tunnel.clientDrained()
        case .site(let site): site.clientDrained()
        case .none, .head, .capturedHello, .lingering: return  // Asked for by a reader since replaced.
        }
    }

    // MARK: - Request heads

    /// Which request head a session waits for.
    enum HeadWait {
        /// A new client's: it must start within the head timeout.
        case firstRequest
        /// A keep-alive client's next one: it may come within the idle timeout of the last byte
        /// that moved either way (the previous response may still be on its way to the client).
        case nextRequest
    }

    /// Listens for the next request head, and reads any bytes of it already buffered. Once its first
    /// byte is in, the head must be complete within the head timeout (``readHead()``).
    /// - Parameter readingBuffered: false to leave buffered bytes for a later turn of the loop
    ///   (after a page answered at once, so pipelined requests do not recurse).
    func awaitHead(_ wait: HeadWait, readingBuffered: Bool = true) {
        reader = .head(newHeadReader)
        switch wait {
        case .firstRequest:
            client.setTimeouts(read: settings.headTimeout, write: settings.headTimeout)
        case .nextRequest:
            client.setTimeouts(read: nil, write: nil)
            watchIdle([client]) { [unowned self] _ in finish() }
        }
        if readingBuffered, client.availableBytes > 0 { readHead() }
        // A buffered head was complete and is being handled, or was answered and the session ended.
        guard record == nil, !finished else { return }
        // A client that half-closed has nothing more to say once its buffered requests are answered.
        if clientEnded { return closeAfterFlush(within: settings.idleTimeout) }
        client.setReading(true)
    }

    /// A reader for the next head, within the head timeout of its first byte (an idle keep-alive
    /// client, with no byte of one, just goes away).
    private var newHeadReader: HeadReader {
        HeadReader(origin: capturedDestination.map(capturedHeadOrigin) ?? Self.headOrigin, limit: settings.headTimeout)
    }

    /// Feeds buffered bytes to the head parser; what follows a complete head stays buffered for the
    /// body, the tunnel or the next request.
    private func readHead() {
        guard case .head(var headReader) = reader else { return }
        if !headReader.hasStarted, client.availableBytes > 0 {
            if client.peek(maximum: 1).first == TLSContentType.handshake {
                // A captured device's TLS to the server it dialled.
                if let original = capturedDestination { return awaitCapturedHello(original) }
                // A browser opened https:// on the listener's own address (iOS fetches a PAC URL
                // over HTTPS first).
                if servesPagesOverTLS { return startDirectTLS() }
            }
            idleTimer?.stop()  // The head deadline takes over from the keep-alive wait.
        }
        let step = headReader.read(from: client, now: { [clock] in clock.monotonicMilliseconds })
        reader = .head(headReader)
        switch step {
        case .needMore(let left):
            // The read limit is what is left of the head's deadline, so bytes that trickle in do not
            // extend it (a per-read limit alone would restart with every byte).
            if let left { client.setTimeouts(read: left, write: settings.idleTimeout) }
        case .timedOut:
            requestTimedOut(refused: headReader.refusedLine)
        case .failed(let error):
            record = refusedRecord(headReader.refusedLine)
            record?.fail(FailureReason(.badRequest, "bad request: \(error.reason)"))
            respond(ProxyResponse.text(status: error.status, reason: error.statusPhrase, body: error.reason + "\n"))
        case .complete(let head, _):
            client.setReading(false)
            reader = .none  // Until route hands the client on.
            route(head)
        }
    }

    /// An event while a head is awaited (`reading`: the reader of the head, nil while answers are
    /// backlogged).
    private func headEvent(_ event: StreamEvent, reading headReader: HeadReader?) {
        let started = headReader?.hasStarted ?? false
        if event == .timeout, started {
            requestTimedOut(refused: headReader?.refusedLine)
        } else if event == .endOfStream, !started, client.pendingOutputBytes > 0 || client.availableBytes > 0 {
            // A client that half-closed after pipelined requests still gets every answer.
            clientEnded = true
            if client.availableBytes > 0 {
                client.noteReadable()
            } else {
                closeAfterFlush(within: settings.idleTimeout)
            }
        } else {
            finish()
        }
    }

    /// The line of a request whose head was refused: with the method, host, port and scheme its
    /// request line had shown when that line was read whole, as ``route(_:)`` or
    /// ``routeCaptured(_:to:)`` would have logged the complete head; else "-". A head for the
    /// proxy's own pages is "-" too: their requests are not logged. (A captured origin-form head
    /// names the address dialled: its Host field may be what was at fault.)
    private func refusedRecord(_ refused: RefusedRequestLine?) -> ConnectionRecord {
        let now = environment.clock.wallMilliseconds
        if let refused, let original = capturedDestination {
            return ConnectionRecord(
                startedAt: now, client: peer, method: refused.method, scheme: .http, host: refused.target.host,
                port: original.port, action: .failed)
        }
        guard let refused, !isForPages(refused) else {
            return ConnectionRecord(
                startedAt: now, client: peer, method: "-", scheme: .http, host: "-", port: 0, action: .failed)
        }
        let scheme: URLScheme =
            if case .authority = refused.target, refused.method == "CONNECT" { .https } else { .http }
        return ConnectionRecord(
            startedAt: now, client: peer, method: refused.method, scheme: scheme, host: refused.target.host,
            port: refused.target.effectivePort, action: .failed)
    }

    /// The head did not complete in time: a 408, and a line in the log as for any other request
    /// the proxy could not read (a client counts on one line per connection it opened), naming
    /// what its request line had shown, if it came whole.
    private func requestTimedOut(refused: RefusedRequestLine?) {
        record = refusedRecord(refused)
        record?.fail(
            FailureReason(
                .requestTimeout, "request timeout: no complete request head within \(settings.headTimeout.logText)"))
        respond(ProxyResponse.text(status: 408, reason: "Request Timeout", body: "no complete request head in time\n"))
    }

    private func route(_ head: RequestHead) {
        if let original = capturedDestination { return routeCaptured(head, to: original) }
        if let arrival = siteArrival(of: head) { return serveSite(head, arrival: arrival) }
        if case .authority(let host, let port) = head.target, head.method == "CONNECT", Self.isOnboardingHost(host) {
            return connectToSite(port: port)
        }
        let now = environment.clock.wallMilliseconds
        let app = head.headers.first("User-Agent").flatMap(AppAgent.init(userAgent:))
        switch head.target {
        case .absolute("http", let host, let port, _):
            record = ConnectionRecord(
                startedAt: now, client: peer, method: head.method, scheme: .http, host: host, port: port ?? 80,
                action: .failed, app: app)
            plainRequest(head, host: host, port: port ?? 80)
        case .authority(let host, let port) where head.method == "CONNECT":
            record = ConnectionRecord(
                startedAt: now, client: peer, method: head.method, scheme: .https, host: host, port: port,
                action: .failed, app: app)
            connectRequest(head, host: host, port: port)
        default:
            record = ConnectionRecord(
                startedAt: now, client: peer, method: head.method, scheme: .http, host: head.target.host,
                port: head.target.effectivePort, action: .failed, app: app)
            record?.fail(FailureReason(.notAProxyRequest, "not a proxy request: \(head.method) \(head.target)"))
            respond(
                ProxyResponse.text(
                    status: 400, reason: "Bad Request",
                    body: "send CONNECT host:port for https, or an absolute http:// URL for plain HTTP\n"))
        }
    }

    /// The policy's answer for the host, without the "why" lines (this is the per-request path).
    func lookUpRequirements(for host: String, scheme: URLScheme) throws(HostIdentity.ParseFailure) -> Requirements {
        try settings.policy.requirements(forHost: host, scheme: scheme, clientClass: clientClass, explaining: false)
    }

    // MARK: - CONNECT

    private func connectRequest(_ head: RequestHead, host: String, port: UInt16) {
        // A CONNECT that declares a body is refused: a hop that honoured its Content-Length would
        // take the first bytes of the tunnel for that body (the smuggling corpus's
        // own-connect-in-tunnel).
        do {
            _ = try head.bodyFraming()
        } catch {
            record?.fail(FailureReason(.badRequest, "bad request: \(error.reason)"))
            return respond(
                ProxyResponse.text(status: error.status, reason: error.statusPhrase, body: error.reason + "\n"))
        }
        let requirements: Requirements
        do {
            requirements = try lookUpRequirements(for: host, scheme: .https)
        } catch {
            record?.fail(FailureReason(.invalidHost, "\(host) is not a host: \(error)"))
            return respond(
                ProxyResponse.text(status: 400, reason: "Bad Request", body: "\(host) is not a host: \(error)\n"))
        }
        let tunnel = ConnectTunnel(
            owner: self, host: host, port: port, requirements: requirements, connectApp: record?.app)
        // The tunnel handles the client from here: its end before the 200 is the tunnel's to act on.
        reader = .tunnel(tunnel)
        tunnel.start()
    }

    /// Looks the verdict for `key` up (cache, a probe in flight, or a new probe with this client's
    /// destination rules); it comes back through ``probeFinished(_:for:)`` on this loop.
    /// `progress`: told how a probe this session started goes (``ProbeProgress``).
    func lookUpVerdict(_ key: VerdictKey, progress: ((ProbeProgress) -> Void)? = nil) {
        environment.lookUpVerdict(key, rules: destinations, session: id, progress: progress) { [weak self] result in
            self?.probeFinished(result, for: key)
        }
    }

    /// The verdict for `key`, for this session's tunnel.
    func probeFinished(_ result: ProbeResult, for key: VerdictKey) { tunnel?.verdictArrived(result, for: key) }

    // MARK: - Plain HTTP

    /// A plain http:// request: blocked with Apple's cleartext error where the policy requires HTTPS
    /// (report mode forwards it and logs it as non-compliant); otherwise forwarded to the origin.
    func plainRequest(_ head: RequestHead, host: String, port: UInt16) {
        let requirements: Requirements
        do {
            requirements = try lookUpRequirements(for: host, scheme: .http)
        } catch {
            record?.fail(FailureReason(.invalidHost, "\(host) is not a host: \(error)"))
            return respond(
                ProxyResponse.text(status: 400, reason: "Bad Request", body: "\(host) is not a host: \(error)\n"))
        }
        let verdict = settings.policy.verdict(for: requirements, observed: nil)
        record?.requirements = requirements
        record?.verdict = verdict
        if !decide(verdict, at: .beforeTunnel).proceeds {
            record?.action = .blocked
            return respond(ProxyResponse.cleartextBlocked(verdict, host: host))
        }
        let framing: BodyFraming
        do {
            framing = try head.bodyFraming()
        } catch {
            record?.fail(FailureReason(.badRequest, "bad request: \(error.reason)"))
            return respond(
                ProxyResponse.text(status: error.status, reason: error.statusPhrase, body: error.reason + "\n"))
        }
        record?.action = .allowed
        let key = OriginKey(host: host, port: port)
        // An idle origin that has spoken since its last response (a callback for its bytes may still
        // be due) is not reused: those bytes would be taken for this request's response.
        let reused = idleOrigin?.key == key && idleOrigin?.connection.availableBytes == 0 ? idleOrigin : nil
        if reused == nil { idleOrigin?.connection.close() }
        idleOrigin = nil
        if let reused {
            return startExchange(head, framing: framing, origin: reused.connection, address: reused.address, key: key)
        }
        // The one way to an upstream: the hosts file, then the loop's resolver, every address
        // vetted before any byte goes to one, then each in turn within the connect timeout.
        dial(host: host, port: port, address: capturedDestination) { [unowned self] result in
            switch result {
            case .success(let (origin, address)):
                startExchange(head, framing: framing, origin: origin, address: address, key: key)
            case .failure(.refused(let refusal)):
                deny(refusal)
            case .failure(.unreachable(let failure, let timedOut)):
                failBeforeResponse(status: timedOut ? 504 : 502, reason: FailureReason(failure, timedOut: timedOut))
            }
        }
    }

    /// Opens a connection upstream: to `address` when a verdict judged one, else to `host` by name.
    /// The one way to an upstream: the hosts file, then the loop's resolver, every address vetted
    /// against the destination rules before any byte goes to one, then each in turn within the
    /// connect timeout.
    func dial(
        host: String, port: UInt16, address: SocketAddress?,
        completion: @escaping (Result<(any ByteStream, SocketAddress), UpstreamDialer.DialFailure>) -> Void
    ) {
        // The dial may end before it returns (a refusal, a name from a hosts file): then there is
        // nothing left to cancel, and what the completion started must not be overwritten.
        var ended = false
        let began = environment.clock.monotonicMilliseconds
        let dial = environment.dial(
            host: host, port: port, address: address, rules: destinations, hosts: settings.hosts,
            timeout: settings.connectTimeout
        ) { [unowned self] result in
            ended = true
            originDial = nil
            if case .success = result { noteConnected(took: environment.clock.monotonicMilliseconds - began) }
            completion(result)
        }
        if !ended { originDial = dial }
    }

    private func startExchange(
        _ head: RequestHead, framing: BodyFraming, origin: any ByteStream, address: SocketAddress, key: OriginKey
    ) {
        record?.upstreamAddress = address.description
        let exchange = PlainHTTPExchange(
            owner: self, origin: origin, address: address, key: key, head: head, requestFraming: framing)
        reader = .exchange(exchange)
        exchange.start()
    }

    /// The destination is one this client may not reach: 403 with the reason, logged as denied.
    func deny(_ refusal: DestinationRefusal) {
        let inTLS = answersInTLS
        endTunnel()  // Its findings first: the denial is the last word.
        let sentence = refusal.sentence(client: clientAddress)
        record?.action = .denied
        record?.upstreamAddress = refusal.destination.description
        record?.fail(FailureReason(.destinationDenied, sentence))
        // A captured TLS device reads no HTTP: it sees a server that reset its connection.
        if inTLS { return closeAfterFlush(within: settings.headTimeout, then: .reset) }
        respond(ProxyResponse.text(status: 403, reason: "Forbidden", body: sentence + "\n"))
    }

    /// The exchange ended: what it moved goes into the record, then the session acts on how it ended.
    func exchangeEnded(_ exchange: PlainHTTPExchange, _ ending: ExchangeEnding) {
        guard self.exchange === exchange else { return }
        reader = .none  // Until the session reads the next head, or closes.
        record?.bytesUp += exchange.tally.bytesUp
        record?.bytesDown += exchange.tally.bytesDown
        if let status = exchange.tally.status { record?.status = status }
        switch ending {
        case .completed(let keepClient, let origin):
            exchangeCompleted(exchange, keepClient: keepClient, origin: origin)
        case .failedBeforeResponse(let status, let reason):
            exchange.origin.close()
            failBeforeResponse(status: status, reason: reason)
        case .requestRefused(let error):
            exchange.origin.close()
            record?.action = .failed
            record?.fail(FailureReason(.badRequest, "bad request body: \(error.reason)"))
            respond(ProxyResponse.text(status: error.status, reason: error.statusPhrase, body: error.reason + "\n"))
        case .aborted(let reason):
            exchange.origin.close()
            record?.fail(reason)
            finish()
        case .truncated(let reason):
            // The line is the request's (as after a complete response); the client then gets what
            // was relayed, and a reset in place of the rest.
            exchange.origin.close()
            record?.fail(reason)
            writeRecord()
            closeAfterFlush(within: settings.idleTimeout, then: .reset)
        case .upgraded:
            // Plain HTTP forwards no Upgrade field, so an exchange here is never upgraded.
            exchange.origin.close()
            finish()
        }
    }

    func clientHalfClosed() { clientEnded = true }

    /// The response is delivered (or being delivered): log it, then read the next head or close.
    private func exchangeCompleted(_ exchange: PlainHTTPExchange, keepClient: Bool, origin: OriginAfterResponse) {
        // The origin's surplus is that request's: its line says so (the client had its response).
        if let reason = origin.surplusReason { record?.fail(reason) }
        writeRecord()
        if origin.isReusable {
            idleOrigin = IdleOrigin(key: exchange.key, connection: exchange.origin, address: exchange.address)
            watchIdleOrigin(exchange.origin)
        } else {
            exchange.origin.close()
        }
        if keepClient, !environment.isDraining {
            awaitHead(.nextRequest)
        } else {
            closeAfterFlush(within: settings.idleTimeout)
        }
    }

    /// The origin must not speak between requests; if it closes or does, it is not reused (its
    /// request's line is written already: the bytes are dropped with the connection).
    private func watchIdleOrigin(_ origin: any ByteStream) {
        origin.setTimeouts(read: settings.idleTimeout, write: nil)
        origin.setReading(true)
        let drop: (any ByteStream) -> Void = { [unowned self] connection in
            connection.close()
            if idleOrigin?.connection === connection { idleOrigin = nil }
        }
        origin.onReadable = drop
        origin.onEvent = { connection, _ in drop(connection) }
        origin.onDrained = nil
    }

    /// The origin could not give an answer, and nothing of one has reached the client: a 502 or 504.
    func failBeforeResponse(status: Int, reason: FailureReason) {
        record?.action = .failed
        record?.fail(reason)
        let phrase = status == 504 ? "Gateway Timeout" : "Bad Gateway"
        respond(
            ProxyResponse.text(
                status: status, reason: phrase, body: "atsproxy could not get a response: \(reason.text)\n"))
    }

    // MARK: - Ending

    /// Sends the proxy's own response, then closes once it is written (lingering: ``linger()``): the
    /// client has as long to read it as it had to send a head.
    func respond(_ bytes: [UInt8]) {
        client.setReading(false)
        endTunnel()
        client.write(bytes)
        closeAfterFlush(within: settings.headTimeout, then: .linger)
    }

    /// Ends the client's connection as `end` says once everything queued for it is written, or
    /// once no byte of it has been taken for `limit`: a close, a lingering one (``linger()``), or a
    /// reset (the reset then comes whatever is left unwritten).
    func closeAfterFlush(within limit: Duration, then end: ClientEnd = .close) {
        idleTimer?.stop()
        client.setTimeouts(read: nil, write: limit)
        client.setReading(false)
        // A client that half-closed after its request still reads the answer: only a real error or
        // a timeout ends the session before the response is written (``clientEvent(_:)``).
        reader = .closing(then: end)
        guard client.pendingOutputBytes > 0 else { return flushed(then: end) }
        awaitClientDrained(to: 0)
    }

    /// The answer is written: close or reset (``finish()``), or linger.
    private func flushed(then end: ClientEnd) {
        if case .linger = end { linger() } else { finish() }
    }

    /// Ends a connection the proxy answered while the client may still be sending (a head too
    /// large, a bad one, one that took too long): half-closes, then reads and drops what comes until
    /// the client closes, for at most ``Self.lingerLimit``. Closing with unread bytes would make the
    /// kernel send a reset, which can reach the client before the answer and destroy it (RFC 9112
    /// §9.6; nginx's lingering_close). The log line is written first: the lingering is not the
    /// request's.
    private func linger() {
        // The client's close, a read timeout or an error then ends it (``clientEvent(_:)``).
        reader = .lingering(deadline: clock.monotonicMilliseconds + Self.lingerLimit.milliseconds, dropped: 0)
        writeRecord()
        client.shutdownWrite()
        client.discardInput(client.availableBytes)
        client.setTimeouts(read: Self.lingerReadLimit, write: nil)
        client.setReading(true)
    }

    /// Drops what a lingering client sent, up to the limits.
    private func dropLingering() {
        guard case .lingering(let deadline, var dropped) = reader else { return }
        dropped += client.availableBytes
        client.discardInput(client.availableBytes)
        reader = .lingering(deadline: deadline, dropped: dropped)
        if dropped > Self.lingerByteLimit || clock.monotonicMilliseconds >= deadline { finish() }
    }

    /// How long a lingering close waits in all, for one read, and how much it drops, at most.
    static let lingerLimit: Duration = .seconds(5)
    static let lingerReadLimit: Duration = .seconds(2)
    static let lingerByteLimit = 1 << 20

    /// What ``ConnectionJudge`` decides for `verdict` at `point`, under this session's settings.
    func decide(_ verdict: Verdict, at point: ConnectionJudge.Point) -> ConnectionJudge.Decision {
        ConnectionJudge.decide(verdict, mode: settings.mode, at: point, blockStyle: settings.intercept.blockStyle)
    }

    /// Notes in the record's `timing` that the verdict is known now.
    func noteVerdictKnown() {
        let elapsed = millisecondsSinceHead  // Read before the record is written: one access at a time.
        record?.timing.verdict = elapsed
    }

    /// Notes in the record's `timing` how long the connection upstream took to open (a dial of the
    /// session's, or the tunnel's connection opened while its probe ran).
    func noteConnected(took milliseconds: Int64) {
        record?.timing.connect = milliseconds
    }

    /// Notes in the record's `timing` that the `200` went now.
    func noteEstablished() {
        let elapsed = millisecondsSinceHead
        record?.timing.established = elapsed
    }

    private var millisecondsSinceHead: Int64? { record.map { environment.clock.wallMilliseconds - $0.startedAt } }

    /// Tells the live view of the tunnel judged and now relaying (its line comes when it ends).
    func tunnelOpened() {
        guard var record else { return }
        if let tunnel { record.fold(tunnel.findings) }
        record.connectionID = id
        noteArrival(in: &record)
        environment.noteOpened(record)
    }

    /// Writes the current record to the log, once.
    func writeRecord() {
        guard var record else { return }
        self.record = nil
        record.durationMilliseconds = environment.clock.wallMilliseconds - record.startedAt
        record.connectionID = id
        noteArrival(in: &record)
        guard let check = serverNameCheck else { return environment.log(record) }
        // With what the server name's check found: at once, or past the session's end.
        environment.log(record, after: check)
    }

    // MARK: - Idle

    /// Calls `onIdle` once no byte has moved through any of `connections`, either way, for the idle
    /// timeout (replacing what was watched before). Their own read and write limits are the caller's
    /// to clear: a side that is silent while the other is busy is not idle.
    func watchIdle(_ connections: [any ByteStream], onIdle: @escaping (IdleTimer.Ending) -> Void) {
        if idleTimer == nil {
            // Without memory for a timer, a session cannot be kept to its limits.
            guard let watch = environment.makeIdleWatch() else { return finish() }
            idleTimer = watch
        }
        idleTimer?.start(
            limit: settings.idleTimeout, stallLimit: settings.stallTimeout, watching: connections, onIdle: onIdle)
    }

    /// Why an idle or stalled tunnel or exchange was closed, for its log line.
    func closedReason(_ ending: IdleTimer.Ending) -> FailureReason {
        switch ending {
        case .idle:
            FailureReason(.closedIdle, "closed: idle for \(settings.idleTimeout.logText), no byte moved either way")
        case .stalled:
            FailureReason(
                .closedStalled,
                "closed: bytes waited \(max(settings.idleTimeout, settings.stallTimeout).logText) for a reader that took none of them"
            )
        }
    }

    // MARK: - Shutdown

    /// A graceful stop began: a client between requests goes now; one in the middle of a request
    /// or tunnel finishes it, then goes (``exchangeCompleted(_:keepClient:origin:)`` checks).
    func drain() {
        switch reader {
        case .lingering: return finish()
        case .head(let headReader) where headReader.hasStarted: return
        // A device that began its ClientHello gets it judged, as a started head does.
        case .capturedHello: return
        default: break
        }
        guard record == nil, exchange == nil else { return }
        finish()
    }

    /// The drain time is up: the connection closes whatever it is doing, and its record says so.
    func closeForShutdown() {
        if case .capturedHello = reader, let original = capturedDestination {
            return logUnfinishedHello(
                original,
                FailureReason(.shutdown, "closed: the proxy is shutting down; the ClientHello was not complete"))
        }
        endTunnel()
        if record != nil, record?.upstreamError == nil {
            record?.fail(FailureReason(.shutdown, "closed: the proxy is shutting down"))
        }
        finish()
    }

    /// Closes the tunnel, if any, and folds what it found into the record: the one place a tunnel's
    /// findings reach the log (closed first, so a splicing relay's byte counts are in them). What
    /// the session then writes of the end (a denial, a shutdown) comes after, so it has the last word.
    func endTunnel() {
        guard let tunnel else { return }
        reader = .none
        tunnel.close()
        record?.fold(tunnel.findings)
    }

    func finish() {
        guard !finished else { return }
        finished = true
        idleTimer?.stop()
        endTunnel()
        let last = reader
        reader = .none
        if case .site(let site) = last { site.close() }
        writeRecord()
        originDial?.cancel()
        originDial = nil
        if case .exchange(let exchange) = last { exchange.origin.close() }
        idleOrigin?.connection.close()
        idleOrigin = nil
        // A cut-off response ends with a reset however the session ends (flushed, the client's
        // error, the write limit, a shutdown).
        if case .closing(then: .reset) = last { client.reset() } else { client.close() }
        environment.sessionEnded(id)
    }
}

/// Where a plain-HTTP request goes: an origin connection is reused only for the same host and port.
struct OriginKey: Hashable {
    var host: String
    var port: UInt16
}

/// An origin connection waiting for the client's next request.
struct IdleOrigin {
    var key: OriginKey
    var connection: any ByteStream
    /// The address it reached, for the next request's log line.
    var address: SocketAddress
}
