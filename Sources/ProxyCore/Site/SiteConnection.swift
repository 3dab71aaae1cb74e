import EventLoop
import ProxyWire

/// One connection to the proxy's own pages: over TLS to the onboarding host (a CONNECT to
/// `atsproxy.test`, or TLS straight to a listener) or to the web listener. Reads request heads and
/// answers each from its ``LocalSite``, keeping the connection for the next (HTTP/1.1 keep-alive,
/// pipelined requests answered in order), or turns it into a server-sent event stream.
///
/// Only GET and HEAD without a body are served: a request with a body is answered 413 and the
/// connection closed, so no body is ever parsed. A head must be complete within the head timeout of
/// its first byte; an idle connection closes after the idle timeout. Loop-confined; `onClose` runs
/// once, when the connection is closed for any reason.
package final class SiteConnection {
    package struct Limits: Sendable {
        package var headTimeout: Duration
        package var idleTimeout: Duration
        /// How many bytes of answers may wait for a client before its next request is read.
        package var answerBacklog: Int

        package init(headTimeout: Duration, idleTimeout: Duration, answerBacklog: Int = 64 * 1024) {
            self.headTimeout = headTimeout
            self.idleTimeout = idleTimeout
            self.answerBacklog = answerBacklog
        }
    }

    enum State {
        case awaitingHead(HeadReader)
        /// Subscribed to a channel of `hub`; the client's bytes are discarded. An event is handed to
        /// the socket only once its output has drained; until then the newest one waits aside
        /// (`waiting`), replacing any older one: a stream holds at most one event in its output and
        /// one waiting, whatever its reader's pace (a state replaces the state before it whole).
        case streaming(channel: String, waiting: SharedBytes?)
        /// The last answer is being written; nothing more is read.
        case closing
        case closed
    }

    let stream: any ByteStream
    let site: any LocalSite
    /// The client's address as the request's `client`, and how it arrived.
    package let client: String
    let arrival: LocalRequest.Arrival
    let listener: String
    let limits: Limits
    /// Where event streams subscribe; nil: a site asking for one gets a 404.
    let hub: EventStreamHub?
    private let onClose: (SiteConnection) -> Void
    private var state: State = .closed
    /// The origin origin-form targets are read against (only their path matters here).
    private let origin: RequestOrigin
    /// Checks each request before the site sees it (the web listener's token); nil lets all through.
    let gate: ((LocalRequest) -> GateDecision)?

    package init(
        stream: any ByteStream, site: any LocalSite, client: String, arrival: LocalRequest.Arrival, listener: String,
        limits: Limits, hub: EventStreamHub? = nil, gate: ((LocalRequest) -> GateDecision)? = nil,
        onClose: @escaping (SiteConnection) -> Void
    ) {
        self.stream = stream
        self.site = site
        self.client = client
        self.arrival = arrival
        self.listener = listener
        self.limits = limits
        self.hub = hub
        self.gate = gate
        self.onClose = onClose
        origin = RequestOrigin(
            scheme: arrival.isSecure ? "https" : "http", host: OnboardingHost.name, port: arrival.isSecure ? 443 : 80)
    }

    /// Starts reading requests (bytes already buffered included).
    package func start() {
        state = .awaitingHead(HeadReader(origin: origin, limit: limits.headTimeout))
        stream.onReadable = { [unowned self] _ in readable() }
        stream.onEvent = { [unowned self] _, event in
            guard case .awaitingHead(let reader) = state else { return close() }
            // A head begun and not finished in time gets 408, as on the proxy's listener.
            if event == .timeout, reader.hasStarted {
                return answerAndClose(
                    .text("no complete request head in time\n", status: 408, reason: "Request Timeout"))
            }
            // A client that half-closed after its requests still gets their answers: those still
            // buffered (waiting for the client to take earlier ones) are answered first.
            if event == .endOfStream {
                clientEnded = true
                if stream.availableBytes > 0 { return }
                return stream.pendingOutputBytes > 0 ? closeAfterFlush() : close()
            }
            close()
        }
        stream.onDrained = nil
        stream.setTimeouts(read: limits.headTimeout, write: limits.idleTimeout)
        stream.setReading(true)
        if stream.availableBytes > 0 { readable() }
    }

    package var isOpen: Bool {
        if case .closed = state { return false }
        return true
    }

    private func readable() {
        switch state {
        case .awaitingHead: readHeads()
        case .streaming, .closing: stream.discardInput(stream.availableBytes)
        case .closed: break
        }
    }

    /// The client half-closed: what it sent is answered, then the connection closes.
    private var clientEnded = false

    private func readHeads() {
        while case .awaitingHead(var reader) = state, stream.availableBytes > 0 {
            // Answers pile up unread: read nothing more until the client takes them.
            if stream.pendingOutputBytes > limits.answerBacklog { return pauseForBacklog() }
            let step = reader.read(from: stream)
            state = .awaitingHead(reader)
            switch step {
            case .needMore(let left):
                if let left { stream.setTimeouts(read: left, write: limits.idleTimeout) }
            case .timedOut:
                return answerAndClose(
                    .text("no complete request head in time\n", status: 408, reason: "Request Timeout"))
            case .failed(let error):
                return answerAndClose(.text(error.reason + "\n", status: error.status, reason: error.statusPhrase))
            case .complete(let head, _):
                answer(head)
            }
        }
        if clientEnded, stream.availableBytes == 0, case .awaitingHead = state { closeAfterFlush() }
    }

    private func answer(_ head: RequestHead) {
        let pathAndQuery: String
        switch head.target {
        case .absolute(_, _, _, let path): pathAndQuery = path
        case .authority: return answerAndClose(.methodNotAllowed(head.method))
        }
        let framing = try? head.bodyFraming()
        guard framing == BodyFraming.none || framing == .contentLength(0) else {
            return answerAndClose(
                .text("atsproxy's pages take no request body\n", status: 413, reason: "Content Too Large"))
        }
        let request = LocalRequest(
            method: head.method, pathAndQuery: pathAndQuery, headers: head.headers, client: client, arrival: arrival,
            listener: listener)
        var extraHeaders: [(name: String, value: String)] = []
        switch gate?(request) {
        case .refuse(let refusal)?: return answerAndClose(refusal)
        case .pass(let headers)?: extraHeaders = headers
        case nil: break
        }
        switch site.reply(to: request) {
        case .response(var response):
            response.headers += extraHeaders
            let keepAlive = head.isKeepAlive
            stream.write(response.serialized(headOnly: head.method == "HEAD", keepAlive: keepAlive))
            if keepAlive {
                // Waiting for the next request: the idle limit, not the head limit.
                stream.setTimeouts(read: limits.idleTimeout, write: limits.idleTimeout)
            } else {
                closeAfterFlush()
            }
        case .eventStream(let channel, let retry):
            guard let hub else { return answerAndClose(.notFound(request.path)) }
            guard hub.admits(client) else {
                var refusal = LocalResponse.text(
                    "\(client) already holds \(hub.maximumPerClient) event streams of this listener, the most one "
                        + "address may: close a tab of the live view (a stream whose reader takes nothing is dropped "
                        + "after the idle timeout)\n", status: 429, reason: "Too Many Requests")
                refusal.headers.append(("Retry-After", "\(limits.idleTimeout.components.seconds)"))
                return answerAndClose(refusal)
            }
            state = .streaming(channel: channel, waiting: nil)
            let fields = extraHeaders.map { "\($0.name): \($0.value)\r\n" }.joined()
            stream.write(
                Array(
                    ("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
                        + "Connection: close\r\n\(fields)\r\nretry: \(retry)\n\n").utf8))
            // The stream stays open as long as the client keeps it; a reader that takes no byte
            // of its backlog for the idle timeout is dropped.
            stream.setTimeouts(read: nil, write: limits.idleTimeout)
            hub.subscribe(self, to: channel)
        }
    }

    private func pauseForBacklog() {
        stream.setReading(false)
        stream.setDrainedMark(0)
        stream.onDrained = { [unowned self] connection in
            connection.onDrained = nil
            guard case .awaitingHead = state else { return }
            connection.setReading(true)
            readHeads()
        }
    }

    /// Hands `event` to the socket when its output has drained; otherwise keeps it aside, in the
    /// place of any event already waiting, and writes it once the output drains.
    func send(event: SharedBytes) {
        guard case .streaming(let channel, let waiting) = state else { return }
        guard stream.pendingOutputBytes > 0 else { return stream.write(event) }
        state = .streaming(channel: channel, waiting: event)
        guard waiting == nil else { return }
        stream.setDrainedMark(0)
        stream.onDrained = { [unowned self] _ in sendWaiting() }
    }

    /// Writes a comment (a heartbeat) only when nothing is being sent or waits: it would add to a
    /// backlog, and a stream that is sending shows it is alive without one.
    func send(comment: SharedBytes) {
        guard case .streaming(_, nil) = state, stream.pendingOutputBytes == 0 else { return }
        stream.write(comment)
    }

    /// The output drained: the event kept aside goes now.
    private func sendWaiting() {
        stream.onDrained = nil
        guard case .streaming(let channel, let waiting?) = state else { return }
        state = .streaming(channel: channel, waiting: nil)
        stream.write(waiting)
    }

    private func answerAndClose(_ response: LocalResponse) {
        stream.write(response.serialized(keepAlive: false))
        closeAfterFlush()
    }

    /// Closes once everything written has reached the client (or the write limit passes).
    private func closeAfterFlush() {
        stream.setReading(false)
        stream.onReadable = nil
        guard stream.pendingOutputBytes > 0 else { return close() }
        if case .streaming(let channel, _) = state { hub?.unsubscribe(self, from: channel) }
        state = .closing
        stream.setDrainedMark(0)
        stream.onDrained = { [unowned self] _ in close() }
        stream.onEvent = { [unowned self] _, _ in close() }
    }

    /// Closes the connection (idempotent).
    package func close() {
        if case .closed = state { return }
        if case .streaming(let channel, _) = state { hub?.unsubscribe(self, from: channel) }
        state = .closed
        stream.onReadable = nil
        stream.onEvent = nil
        stream.onDrained = nil
        stream.close()
        onClose(self)
    }
}

extension LocalRequest.Arrival {
    var isSecure: Bool {
        switch self {
        case .proxied(let secure), .direct(let secure): secure
        case .web: false
        }
    }
}

/// What a gate says of a request before the site answers it.
package enum GateDecision {
    /// Answer it, with these fields added to the response (a cookie that keeps a token).
    case pass(addHeaders: [(name: String, value: String)])
    /// Answer this instead, and close.
    case refuse(LocalResponse)
}
