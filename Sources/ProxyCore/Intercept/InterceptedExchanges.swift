import ATSPolicy
import EventLoop
import LogRecord
import ProxyWire
import TLSInspection

/// The HTTP/1.1 requests inside an intercepted connection, one after another on the device's TLS
/// session, each relayed to the origin's by a ``PlainHTTPExchange`` (the code that relays plain
/// http://, over decrypted streams) and logged as one ``RequestRecord``. Keep-alive, chunked
/// bodies, `Expect: 100-continue` and `Connection: close` behave as they do for plain HTTP; the
/// origin connection serves this device only, so when it cannot take another request the device is
/// told so (`Connection: close`) and the connection ends after the response.
///
/// The device's bytes are HTTP throughout when its ALPN says `http/1.1`, or when its first bytes
/// begin as a request does (``RequestLineDetection/start(of:)``): a head the parser refuses gets
/// 400, 501 or 505 inside the TLS session, as plain mode answers it, and its line. Only positive
/// evidence of another protocol (no ALPN, and first bytes no request begins with) or an accepted
/// upgrade makes the connection an opaque relay (``relayStream(upgradedTo:)``). Every request must
/// name the origin's authority, the one its connection was judged for; one naming another gets a
/// 400 and goes nowhere (``RequestOrigin/foreignAuthority(in:)``).
///
/// A page-style block (`blocked`) answers every request with the 403 page instead, and nothing
/// reaches the origin. Loop-confined; owned by its ``InterceptedTunnel``.
final class InterceptedExchanges: ExchangeOwner {
    unowned let tunnel: ConnectTunnel
    let device: TLSByteStream
    /// The origin's session; nil for a page-style block made without one (the proxy's own
    /// handshake was refused), which answers every request itself.
    let origin: TLSByteStream?
    let address: SocketAddress?
    let requestOrigin: RequestOrigin
    let blocked: Verdict?
    private var headReader: HeadReader
    private var exchange: PlainHTTPExchange?
    /// The request in progress: its line, and when its first byte came (``MonotonicClock``).
    var current: (record: RequestRecord, startedAt: Int64)?
    private var requests = 0
    /// The app the last request's User-Agent named.
    private var userAgents = AppAgentMemo()
    /// Between requests: the device's bytes are a request head, however many reads it takes.
    private var awaitingHead = false
    /// Whether the device's bytes are known to be HTTP: from the start when its ALPN said
    /// `http/1.1`, else once its first bytes showed it. Never unset: every later head is parsed.
    private var speaksHTTP: Bool
    /// The bytes of the request head being read, as the device sent them.
    private(set) var clientEnded = false
    private var ended = false
    /// A response was cut off (``ExchangeEnding/truncated(reason:)``): the device's connection
    /// ends with a reset, whichever way it ends, never with close_notify.
    private var responseCut = false
    /// The device closed after its handshake, before any byte of a request: returns whether the
    /// owner took it as the device refusing the certificate (and ended the tunnel).
    var onClosedBeforeRequest: (() -> Bool)?
    /// The bytes inside the TLS are not HTTP: each side's end, passed on, while they are relayed.
    var streamEnds = (device: false, origin: false)

    var owner: any TunnelOwner { tunnel.owner }
    var client: any ByteStream { device }
    var settings: ProxySettings { owner.settings }
    var clock: any SessionClock { owner.environment.clock }

    init(
        tunnel: ConnectTunnel, device: TLSByteStream, origin: TLSByteStream?, address: SocketAddress?,
        requestOrigin: RequestOrigin,
        blocked: Verdict?
    ) {
        self.tunnel = tunnel
        self.device = device
        self.origin = origin
        self.address = address
        self.requestOrigin = requestOrigin
        self.blocked = blocked
        headReader = HeadReader(origin: requestOrigin, limit: tunnel.settings.headTimeout)
        // The device chose HTTP/1.1 itself: nothing it sends is taken for another protocol.
        speaksHTTP = device.tls.selectedApplicationProtocol == "http/1.1"
    }

    func start() {
        origin?.onReadable = nil
        origin?.onEvent = nil
        awaitHead()
    }

    /// Closes both sessions (close_notify where they are sound; the device's reset after a cut-off
    /// response) and notes the count. Idempotent.
    func close() {
        guard !ended else { return }
        ended = true
        tunnel.findings.requests = requests
        // An end without close_notify (or a broken session) on one leg is not made clean on the other.
        if let origin {
            if origin.endedCleanly == false || origin.failure != nil { device.passOnTruncation() }
            if device.endedCleanly == false || device.failure != nil { origin.passOnTruncation() }
        }
        if responseCut { device.reset() } else { device.close() }
        origin?.close()
    }

    // MARK: - Request heads

    private func awaitHead() {
        headReader.reset()
        awaitingHead = true
        device.setTimeouts(read: nil, write: nil)
        // Between requests the device may wait as long as the idle timeout; the tunnel's line then
        // says the proxy closed it, as tunnel mode's does.
        watchIdle([device]) { [unowned self] ending in
            tunnel.findings.fail(owner.closedReason(ending))
            end()
        }
        device.onReadable = { [unowned self] _ in readHead() }
        device.onEvent = { [unowned self] _, event in
            if requests == 0, current == nil, event != .timeout, onClosedBeforeRequest?() == true { return }
            end()
        }
        if blocked == nil, let origin {
            // The origin serves this device only: when it closes its kept-alive connection (its idle
            // timeout), the device's ends too, so its next request goes on a new one, not to a 502.
            // Bytes before a request are no HTTP response either.
            origin.onReadable = { [unowned self] _ in originBetweenRequests() }
            origin.onEvent = { [unowned self] _, _ in originBetweenRequests() }
            origin.setReading(true)
        }
        if device.availableBytes > 0 { readHead() }
        guard awaitingHead, !ended else { return }
        if clientEnded { return end() }
        device.setReading(true)
    }

    private func readHead() {
        guard awaitingHead, device.availableBytes > 0 else { return }
        if current == nil {
            current = (
                RequestRecord(startedAt: clock.wallMilliseconds, connection: facts, reused: requests > 0),
                clock.monotonicMilliseconds
            )
        }
        if !speaksHTTP {
            guard decideProtocol() else { return }
        }
        // Between requests and while a head arrives, the idle watch bounds a silent device (its
        // read limit is its TLS transport's); a head that trickles in gets the listener's limit.
        switch headReader.read(from: device, now: { [clock] in clock.monotonicMilliseconds }) {
        case .needMore:
            return
        case .timedOut:
            headTimedOut()
        case .failed(let error):
            awaitingHead = false
            name(headReader.refusedLine)
            refuse(
                status: error.status, reason: error.statusPhrase, body: error.reason,
                logged: "bad request: \(error.reason)"
            )
        case .complete(let head, let bytes):
            device.setReading(false)
            awaitingHead = false
            started(head, headBytes: bytes)
        }
    }

    /// The longest run of first bytes that may still be undecided: a head's size limit. Token bytes
    /// that long showed no other protocol either; the parser refuses them as a request.
    private static let undecidedLimit = HeadLimits().maximumHeadBytes

    /// No ALPN: the first bytes say whether the device speaks HTTP (then true: read the head), or
    /// another protocol (relayed, or, to a blocked server, not). False while they cannot tell yet.
    private func decideProtocol() -> Bool {
        let first = device.peek(maximum: Self.undecidedLimit)
        switch RequestLineDetection.start(of: first) {
        case .http:
            speaksHTTP = true
            return true
        case .otherProtocol:
            awaitingHead = false
            guard blocked == nil else {
                // Nothing reaches a blocked server, whatever the device speaks.
                current?.record.kind = .tlsStream
                logCurrent(error: "bytes that are not HTTP were not relayed: the server is blocked")
                end()
                return false
            }
            relayStream(upgradedTo: nil)
            return false
        case .undecided:
            // A prefix of a request that is still arriving: within the head's limits, as a head.
            if first.count >= Self.undecidedLimit {
                speaksHTTP = true
                return true
            }
            if let startedAt = current?.startedAt,
                clock.monotonicMilliseconds - startedAt >= settings.headTimeout.milliseconds
            {
                headTimedOut()
            }
            return false
        }
    }

    private func headTimedOut() {
        awaitingHead = false
        name(headReader.refusedLine)
        refuse(
            status: 408, reason: "Request Timeout", body: "no complete request head in time",
            logged: "request timeout: no complete request head within \(settings.headTimeout.logText)")
    }

    /// The origin spoke or ended while no request was in flight: the connection cannot carry
    /// another exchange.
    private func originBetweenRequests() {
        guard awaitingHead else { return }
        end()
    }

    /// Names the refused request in its line: the method, URL and version its request line showed.
    private func name(_ refused: RefusedRequestLine?) {
        guard let refused else { return }
        current?.record.method = refused.method
        current?.record.url = requestOrigin.url(of: refused.target)
        current?.record.httpVersion = Self.loggedVersion(refused.version)
    }

    /// A request line's version as the log writes it (a line that parsed is 1.0 or 1.1).
    private static func loggedVersion(_ version: HTTPVersion) -> String {
        version == .http10 ? "HTTP/1.0" : "HTTP/1.1"
    }

    private var facts: RequestRecord.ConnectionFacts { tunnel.requestFacts(upstream: address) }

    private func started(_ head: RequestHead, headBytes: Int64) {
        requests += 1
        current?.record.method = head.method
        // The connection's authority, not the one the request names: only the former was judged,
        // and a request naming another is refused below.
        current?.record.url = requestOrigin.url(of: head.target)
        current?.record.httpVersion = Self.loggedVersion(head.version)
        current?.record.requestHeadBytes = headBytes
        current?.record.noteUserAgent(head.headers.first("User-Agent"), memo: &userAgents)
        if tunnel.findings.firstRequestApp == nil { tunnel.findings.firstRequestApp = current?.record.requestApp }
        if settings.intercept.logHeaders {
            current?.record.requestHeaders = RequestRecord.loggedHeaders(
                head.headers.fields.map { ($0.name, $0.value) }, logSecrets: settings.intercept.logSecrets)
        }
        if let foreign = requestOrigin.foreignAuthority(in: head) {
            return refuse(status: 400, reason: "Bad Request", body: foreign, logged: "bad request: \(foreign)")
        }
        if let blocked { return answerBlocked(head, verdict: blocked) }
        let framing: BodyFraming
        do {
            framing = try head.bodyFraming()
        } catch {
            return refuse(
                status: error.status, reason: error.statusPhrase, body: error.reason,
                logged: "bad request: \(error.reason)")
        }
        guard let origin, let address else { return end() }  // Only a page-style block has none.
        let exchange = PlainHTTPExchange(
            owner: self, origin: origin, address: address,
            key: OriginKey(host: requestOrigin.host, port: requestOrigin.port),
            head: head, requestFraming: framing, originIsDedicated: true,
            relaysUpgrades: true)
        self.exchange = exchange
        // The device's bytes and events are the exchange's until it ends (the session's own
        // stream is the TLS transport under ``device``, whose callbacks ``device`` holds).
        device.onReadable = { [weak exchange] _ in exchange?.clientReadable() }
        device.onEvent = { [weak exchange] _, event in exchange?.clientEvent(event) }
        exchange.start()
    }

    // MARK: - Exchanges

    func clientHalfClosed() { clientEnded = true }

    func watchIdle(_ streams: [any ByteStream], onIdle: @escaping (IdleTimer.Ending) -> Void) {
        owner.watchIdle(streams, onIdle: onIdle)
    }

    func closedReason(_ ending: IdleTimer.Ending) -> FailureReason { owner.closedReason(ending) }

    func awaitClientDrained(to mark: Int) {
        device.onDrained = { [weak self] device in
            device.onDrained = nil
            self?.exchange?.clientDrained()
        }
        device.setDrainedMark(mark)
    }

    func exchangeEnded(_ exchange: PlainHTTPExchange, _ ending: ExchangeEnding) {
        guard self.exchange === exchange else { return }
        self.exchange = nil
        let tally = exchange.tally
        tunnel.findings.bytesUp += tally.bytesUp
        tunnel.findings.bytesDown += tally.bytesDown
        if var line = current?.record, let startedAt = current?.startedAt {
            line.status = tally.status
            line.statusText = tally.response?.reason
            line.contentType = tally.response?.headers.values(for: "Content-Type").first
            line.requestBodyBytes = tally.requestBodyBytes
            line.responseBodyBytes = tally.responseBodyBytes
            line.responseHeadBytes = tally.responseHeadBytes
            line.sendMilliseconds = max(0, (tally.requestSentAt ?? startedAt) - startedAt)
            line.timeToFirstByteMilliseconds = tally.firstResponseByteAt.map { max(0, $0 - startedAt) }
            if settings.intercept.logHeaders, let response = tally.response {
                line.responseHeaders = RequestRecord.loggedHeaders(
                    response.headers.fields.map { ($0.name, $0.value) }, logSecrets: settings.intercept.logSecrets)
            }
            current?.record = line
        }
        switch ending {
        case .completed(let keepClient, let origin):
            // The origin's surplus ends the connection it came on, and the device's with it: the
            // request's line and the tunnel's say why.
            if let reason = origin.surplusReason { tunnel.findings.fail(reason) }
            logCurrent(error: origin.surplusReason?.text, failure: origin.surplusReason?.failure)
            guard keepClient, origin.isReusable, !owner.environment.isDraining else { return endAfterFlush() }
            awaitHead()
        case .failedBeforeResponse(let status, let reason):
            current?.record.failure = reason.failure
            refuse(
                status: status, reason: status == 504 ? "Gateway Timeout" : "Bad Gateway", body: reason.text,
                logged: reason.text)
        case .requestRefused(let error):
            // The body was refused half-way: its head already went to the origin, so the line says
            // so as plain forwarding's does, apart from a head refused before anything went out.
            refuse(
                status: error.status, reason: error.statusPhrase, body: error.reason,
                logged: "bad request body: \(error.reason)")
        case .aborted(let reason):
            logCurrent(error: reason.text, failure: reason.failure)
            end()
        case .truncated(let reason):
            // What was relayed reaches the device, then a reset: no close_notify, which would let a
            // body that runs until the close pass for a whole one. The tunnel's line says so too.
            tunnel.findings.fail(reason)
            logCurrent(error: reason.text, failure: reason.failure)
            responseCut = true
            endAfterFlush()
        case .upgraded(let name):
            // A WebSocket, say: its bytes are relayed as they come, and counted on the request's line.
            relayStream(upgradedTo: name)
        }
    }

    /// Answers the device inside its TLS session, logs, and ends once the answer is written.
    private func refuse(status: Int, reason: String, body: String, logged: String) {
        let response = ProxyResponse.text(status: status, reason: reason, body: body + "\n")
        if current != nil {
            current?.record.status = status
            current?.record.statusText = reason
            logCurrent(error: logged)
        }
        device.write(response)
        endAfterFlush()
    }

    /// The page-style block: a 403 naming the violations, for every request; nothing goes upstream.
    private func answerBlocked(_ head: RequestHead, verdict: Verdict) {
        let response = ProxyResponse.blockedPage(
            verdict, host: requestOrigin.host, url: requestOrigin.url(of: head.target), head: head)
        current?.record.status = 403
        current?.record.statusText = "Forbidden"
        current?.record.responseHeadBytes = -1
        logCurrent(error: nil)
        device.write(response)
        // The request's body is not read: the connection ends with the answer.
        endAfterFlush()
    }

    /// Writes the current request's line, with `error` (and its code, `failure`, when known).
    func logCurrent(error: String?, failure: Failure? = nil) {
        guard let (recorded, startedAt) = current else { return }
        var line = recorded
        current = nil
        line.upstreamError = error
        if let failure { line.failure = failure }
        line.durationMilliseconds = max(0, clock.monotonicMilliseconds - startedAt)
        line.connection.action = tunnel.findings.action ?? line.connection.action
        owner.environment.log(request: line)
    }

    /// Ends once what the device is owed has been written (or the write limit passes).
    private func endAfterFlush() {
        device.whenFlushed(within: settings.idleTimeout) { [unowned self] in end() }
    }

    func end() {
        // A head cut off (or left idle) after its request line still names the request.
        if awaitingHead { name(headReader.refusedLine) }
        if current != nil { logCurrent(error: "the connection ended before the request was complete") }
        close()
        owner.finish()
    }
}
