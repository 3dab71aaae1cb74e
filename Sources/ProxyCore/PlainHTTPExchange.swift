import ATSPolicy
import EventLoop
import Glibc
import LogRecord
import ProxyWire

/// One plain http:// request the policy lets through: its head rewritten for the origin (origin
/// form, hop-by-hop fields gone, `Via` added), its body streamed as it arrives, and the response
/// streamed back the same way, both with backpressure. Loop-confined; owned by its session.
///
/// The client and origin connections stay the session's. The exchange borrows the origin's
/// callbacks until it ends; the client's stay its owner's, which hands them on to the exchange
/// (``ClientBytesHandler``) from its start until it ends. It says once how it ended
/// (``ExchangeEnding``), through ``ExchangeOwner``: the only part of the session it sees. What it
/// moved is in ``tally``, which the session logs.
final class PlainHTTPExchange: ClientBytesHandler {
    let origin: any ByteStream
    /// The address `origin` reached.
    let address: SocketAddress
    let key: OriginKey
    private unowned let owner: any ExchangeOwner
    /// What the exchange moved, and the origin's status: the session's log record takes them.
    private(set) var tally = ExchangeTally()
    private let head: RequestHead
    private var requestBody: BodyTransfer
    private var responseParser = ResponseHeadParser()
    private var responseBody: BodyTransfer?
    /// How the final response's body ends, as its head said: the surplus's log text names it.
    private var responseFraming: BodyFraming?
    /// Whether the origin connection may serve another request after this response.
    private var originReusable = false
    /// Whether the client connection may send another request after this response.
    private var clientReusable = false
    private var reported = false
    /// The bytes of the response head being read, as the origin sent them.
    private var responseHeadBytes: Int64 = 0
    /// The origin connection serves this client only (an intercepted TLS connection): when it
    /// cannot serve another request, neither can the client's, which is told so.
    private let originIsDedicated: Bool
    /// The protocol the request asks to switch to (WebSocket), when the owner relays upgrades: the
    /// Upgrade field and `Connection: upgrade` are forwarded, and a 101 ends the exchange with
    /// ``ExchangeEnding/upgraded(protocol:)`` once its head is passed on.
    private let upgradeRequested: String?

    static let via = "atsproxy"

    /// - Parameter origin: connected already (``UpstreamDialer``, or an idle origin kept from the
    ///   client's last request): the connect and its timeout are the dialer's.
    init(
        owner: any ExchangeOwner, origin: any ByteStream, address: SocketAddress, key: OriginKey, head: RequestHead,
        requestFraming: BodyFraming, originIsDedicated: Bool = false, relaysUpgrades: Bool = false
    ) {
        self.originIsDedicated = originIsDedicated
        // A request with a body is not upgraded: the switch would come after bytes of another protocol.
        let bodiless = if case .none = requestFraming { true } else { false }
        upgradeRequested = relaysUpgrades && bodiless ? Self.upgrade(asked: head) : nil
        self.owner = owner
        self.origin = origin
        self.address = address
        self.key = key
        self.head = head
        self.requestBody = BodyTransfer(requestFraming, kind: .request)
    }

    private var client: any ByteStream { owner.client }
    private var settings: ProxySettings { owner.settings }

    func start() {
        // Weak: a callback libevent deferred may still run after the exchange has ended.
        origin.onReadable = { [weak self] _ in self?.originReadable() }
        origin.onEvent = { [weak self] _, event in self?.originEvent(event) }
        origin.onDrained = nil
        sendRequest()
    }

    // MARK: - The request

    /// From here the exchange is idle only when no byte moves through the client or the origin,
    /// either way, for the idle timeout: a long upload gets no answer while it lasts, and a long
    /// download sends nothing up.
    private func sendRequest() {
        origin.setTimeouts(read: nil, write: nil)
        client.setTimeouts(read: nil, write: nil)
        owner.watchIdle([client, origin]) { [weak self] ending in self?.idleTimedOut(ending) }
        origin.setReading(true)
        var bytes = head.headForOrigin(via: Self.via)
        if let upgradeRequested { Self.append(["Connection: Upgrade", "Upgrade: \(upgradeRequested)"], to: &bytes) }
        origin.write(bytes)
        tally.bytesUp += Int64(bytes.count)
        pumpRequestBody()
        if !requestBody.isFinished { client.setReading(true) }
    }

    /// The request body's bytes.
    func clientReadable() { pumpRequestBody() }

    private func pumpRequestBody() {
        while !requestBody.isFinished, client.availableBytes > 0 {
            let count: Int
            do {
                count = try requestBody.bodyBytes(bufferedIn: client)
            } catch {
                return responseStarted ? truncate("bad request body: \(error.reason)") : end(.requestRefused(error))
            }
            guard count > 0 else { break }
            tally.bytesUp += Int64(client.moveInput(to: origin, maximum: count))
            tally.requestBodyBytes = requestBody.payloadBytes
        }
        if requestBody.isFinished {
            if tally.requestSentAt == nil { tally.requestSentAt = owner.clock.monotonicMilliseconds }
            // What follows is the client's next request: it waits until this response is over.
            client.setReading(false)
            return finishIfDone()
        }
        Backpressure.apply(source: client, target: origin) { [weak self] in
            guard let self else { return false }
            return !requestBody.isFinished && !owner.clientEnded
        }
    }

    // MARK: - The response

    private var responseStarted: Bool { responseBody != nil }

    private func originReadable() {
        if responseStarted { pumpResponseBody() } else { readResponseHead() }
    }

    private func readResponseHead() {
        while !responseStarted, origin.availableBytes > 0 {
            // The first byte of the head being read: after an interim (1xx) answer, the next one's.
            if tally.firstResponseByteAt == nil { tally.firstResponseByteAt = owner.clock.monotonicMilliseconds }
            let bytes = origin.peek(maximum: 16 * 1024)
            switch responseParser.consume(bytes) {
            case .needMoreData:
                origin.discardInput(bytes.count)
                responseHeadBytes += Int64(bytes.count)
            case .failed(let error):
                return end(
                    .failedBeforeResponse(
                        status: 502, reason: FailureReason(.badResponse, "the origin's response: \(error.reason)")))
            case .complete(let response, let leftover):
                origin.discardInput(bytes.count - leftover.count)
                responseHeadBytes += Int64(bytes.count - leftover.count)
                guard startResponse(response) else { return }
            }
        }
        if responseStarted { pumpResponseBody() }
    }

    /// The most interim (1xx) responses passed on for one request: RFC 9110 §15.2 sets no limit, and
    /// an origin that sent them without end would hold the exchange (and the client's buffer) for ever.
    static let maximumInterimResponses = 16
    private var interimResponses = 0

    /// Forwards a response head; an interim (1xx) one is passed on and the next head awaited.
    /// Returns false when the exchange ended instead.
    private func startResponse(_ response: ResponseHead) -> Bool {
        if response.status == 101 {
            // The Upgrade field is hop-by-hop: unless it was forwarded, the origin broke the protocol.
            guard let upgradeRequested else {
                end(
                    .failedBeforeResponse(
                        status: 502,
                        reason: FailureReason(.badResponse, "the origin switched protocols without being asked to")))
                return false
            }
            let chosen = response.headers.values(for: "Upgrade").first ?? upgradeRequested
            var bytes = response.serialized(addingVia: Self.via)
            Self.append(["Connection: Upgrade", "Upgrade: \(chosen)"], to: &bytes)
            client.write(bytes)
            tally.status = 101
            tally.response = response
            tally.responseHeadBytes = responseHeadBytes
            tally.bytesDown += Int64(bytes.count)
            end(.upgraded(protocol: chosen))
            return false
        }
        if (100...199).contains(response.status) {
            interimResponses += 1
            guard interimResponses <= Self.maximumInterimResponses else {
                end(
                    .failedBeforeResponse(
                        status: 502,
                        reason: FailureReason(
                            .badResponse,
                            "the origin sent more than \(Self.maximumInterimResponses) interim (1xx) responses to one request"
                        )))
                return false
            }
            let bytes = response.serialized(addingVia: Self.via)
            client.write(bytes)
            tally.bytesDown += Int64(bytes.count)
            responseParser = ResponseHeadParser()
            responseHeadBytes = 0
            // An interim answer (100 Continue) is part of sending the request: the time to first
            // byte is the final answer's, or HAR's send, wait and receive would count the upload twice.
            tally.firstResponseByteAt = nil
            return true
        }
        let framing: BodyFraming
        do {
            framing = try response.bodyFraming(requestMethod: head.method)
        } catch {
            end(
                .failedBeforeResponse(
                    status: 502, reason: FailureReason(.badResponse, "the origin's response: \(error.reason)")))
            return false
        }
        let body = BodyTransfer(framing, kind: .response)
        responseFraming = framing
        originReusable = !response.connectionMustClose && !body.runsUntilClose
        clientReusable = head.isKeepAlive && !body.runsUntilClose && (originReusable || !originIsDedicated)
        var bytes = response.serialized(addingVia: Self.via)
        if !clientReusable {
            // The hop-by-hop fields were dropped; tell the client this connection ends here.
            bytes.removeLast(2)
            bytes += Array("Connection: close\r\n\r\n".utf8)
        }
        client.write(bytes)
        tally.status = response.status
        tally.response = response
        tally.responseHeadBytes = responseHeadBytes
        tally.bytesDown += Int64(bytes.count)
        responseBody = body
        return true
    }

    private func pumpResponseBody() {
        guard var body = responseBody else { return }
        while !body.isFinished, origin.availableBytes > 0 {
            let count: Int
            do {
                count = try body.bodyBytes(bufferedIn: origin)
            } catch {
                responseBody = body
                return truncate("the origin's response body: \(error.reason)")
            }
            guard count > 0 else { break }
            tally.bytesDown += Int64(origin.moveInput(to: client, maximum: count))
            tally.responseBodyBytes = body.payloadBytes
        }
        responseBody = body
        if body.isFinished {
            origin.setReading(false)
            return finishIfDone()
        }
        // Resumed from ``clientDrained()``: the client's callbacks are the owner's.
        if Backpressure.pausesReading(of: origin, for: client) { owner.awaitClientDrained(to: Backpressure.resumeMark) }
    }

    /// The client took enough of the response: the origin is read again, unless the body is done.
    func clientDrained() {
        client.setDrainedMark(0)
        if responseBody?.isFinished == false { origin.setReading(true) }
    }

    // MARK: - Events

    private func originEvent(_ event: StreamEvent) {
        switch event {
        case .connected:
            return  // Connected before the exchange began.
        case .endOfStream where responseBody?.runsUntilClose == true && origin.inputEndedCleanly:
            responseBody = BodyTransfer(.none, kind: .response)
            originReusable = false
            finishIfDone()
        case .endOfStream where responseBody?.runsUntilClose == true:
            // A TLS origin's end without close_notify: the body may have been cut anywhere.
            truncate("the origin ended its TLS session without close_notify")
        case .endOfStream:
            failOrAbort(FailureReason(.upstreamClosed, "the origin closed the connection"))
        case .timeout:
            // The exchange sets no limit of its own on the origin (the idle timer watches it).
            failOrAbort(FailureReason(.upstreamTimeout, "the origin connection timed out"))
        case .error(let code) where responseStarted:
            switch code {
            case ECONNRESET: truncate("the origin reset the connection")
            case EPROTO: truncate("the origin's TLS session failed")  // A TLS origin's (``TLSByteStream``).
            default: truncate("the origin's connection failed: \(StreamEvent.error(code).description)")
            }
        case .error(let code):
            failOrAbort(FailureReason(.upstreamClosed, StreamEvent.error(code).description))
        }
    }

    /// Nothing moved either way for the idle timeout: a 504 if the whole request went and no answer
    /// came, a cut-off response if one had begun, otherwise all the proxy can do is close.
    private func idleTimedOut(_ ending: IdleTimer.Ending) {
        if ending == .idle, requestBody.isFinished, !responseStarted {
            end(
                .failedBeforeResponse(
                    status: 504,
                    reason: FailureReason(
                        .upstreamTimeout, "the origin did not answer within \(settings.idleTimeout.logText)")))
        } else if responseStarted {
            truncate(owner.closedReason(ending).text)
        } else {
            end(.aborted(reason: owner.closedReason(ending)))
        }
    }

    /// The origin failed: a 502 while nothing of a response has gone to the client, else the
    /// response is cut off.
    private func failOrAbort(_ reason: FailureReason) {
        if responseStarted {
            truncate(reason.text)
        } else {
            end(.failedBeforeResponse(status: 502, reason: reason))
        }
    }

    /// The response's head has gone to the client and its body cannot end as its framing (or the
    /// origin's clean close) would end it: the exchange ends ``ExchangeEnding/truncated(reason:)``,
    /// its sentence saying how many body bytes were relayed and why they stopped (`cause`).
    private func truncate(_ cause: String) {
        let relayed = responseBody?.payloadBytes ?? 0
        let whole =
            if case .contentLength(let length) = responseFraming { " of \(length) (its Content-Length)" } else { "" }
        end(
            .truncated(
                reason: FailureReason(
                    .responseTruncated, "the response was cut off after \(relayed) body bytes\(whole): \(cause)")))
    }

    func clientEvent(_ event: StreamEvent) {
        guard event == .endOfStream, requestBody.isFinished else {
            return end(
                .aborted(reason: FailureReason(.clientClosed, "the client went away before the exchange was over")))
        }
        // A client may half-close after its requests and still read the responses.
        owner.clientHalfClosed()
        client.setReading(false)
    }

    /// Reports back once the response is complete. A response that ends before its request body is
    /// sent ends the client's connection too, since the rest of that body cannot be told apart
    /// from a next request; so does a dedicated origin that cannot serve another request, its
    /// surplus included (the response's head has gone without `Connection: close`: the client
    /// learns it from the close, after the response).
    private func finishIfDone() {
        guard responseBody?.isFinished == true else { return }
        let requestDone = requestBody.isFinished
        let origin = originAfterResponse(requestDone: requestDone)
        // A client that half-closed is still owed answers to requests it pipelined before.
        let moreRequests = !owner.clientEnded || client.availableBytes > 0
        let keepClient = clientReusable && requestDone && moreRequests && (origin.isReusable || !originIsDedicated)
        end(.completed(keepClient: keepClient, origin: origin))
    }

    /// What the origin connection is good for now that the response is over: a byte of the
    /// origin's beyond it (issue 27: a body on a HEAD, 204 or 304 answer, more than the
    /// Content-Length, in the same write) would be read as the next request's response, so a
    /// connection holding one is never reused.
    private func originAfterResponse(requestDone: Bool) -> OriginAfterResponse {
        let reusable = originReusable && requestDone
        // What the origin sent with the response's last bytes may not have been read yet (a read
        // stops at its size; a TLS origin's records are decrypted as they are read): read it now,
        // rather than find it later in front of the next response.
        if reusable { origin.readImmediately() }
        let surplus = origin.availableBytes
        guard surplus == 0 else {
            let end =
                switch responseFraming {
                case .contentLength(let length): "its Content-Length was \(length)"
                case .chunked: "after its last chunk"
                case .some(.none) where head.method == "HEAD": "a response to HEAD has no body"
                case .some(.none): "a \(tally.status ?? 0) response has no body"
                case .untilClose, nil: "the end of its response"
                }
            return .surplus(
                bytes: surplus,
                reason: FailureReason(
                    .responseSurplus,
                    "the origin sent \(surplus) bytes beyond the end of its response (\(end)): "
                        + "the client had the response as framed, and the origin's connection was closed, not reused"))
        }
        return reusable ? .reusable : .closing
    }

    /// The protocol a request asks to switch to: its Upgrade value, when its Connection field lists
    /// `upgrade` (RFC 9110 §7.8); the caller passes only requests without a body.
    private static func upgrade(asked head: RequestHead) -> String? {
        let connection = head.headers.values(for: "Connection").flatMap { $0.split(separator: ",") }
        guard connection.contains(where: { $0.lowercased().split(separator: " ").first == "upgrade" }),
            let value = head.headers.values(for: "Upgrade").first, !value.isEmpty,
            value.allSatisfy({ $0 != "\r" && $0 != "\n" })
        else { return nil }
        return value
    }

    /// Adds `fields` to a serialized head, before its final empty line.
    private static func append(_ fields: [String], to head: inout [UInt8]) {
        head.removeLast(2)
        for field in fields { head += Array((field + "\r\n").utf8) }
        head += [13, 10]
    }

    /// Tells the session, once, how the exchange ended.
    private func end(_ ending: ExchangeEnding) {
        guard !reported else { return }
        reported = true
        owner.exchangeEnded(self, ending)
    }
}

/// How a ``PlainHTTPExchange`` ended, which its session acts on.
enum ExchangeEnding {
    /// The response is delivered, or on its way: the session may read another request, and keep
    /// the origin for the next one when it is ``OriginAfterResponse/reusable``.
    case completed(keepClient: Bool, origin: OriginAfterResponse)
    /// Nothing of a response reached the client: it gets `status` (502 or 504) with the reason.
    case failedBeforeResponse(status: Int, reason: FailureReason)
    /// The request's own body cannot be framed, before any response: 400 (or what the error says).
    case requestRefused(HeadError)
    /// The exchange ended before it was over with nothing of a response to protect: the client went
    /// away, or an upload went idle before any answer. All the proxy can do is close.
    case aborted(reason: FailureReason)
    /// The response's head reached the client, and its body did not end by its framing (short of
    /// its Content-Length, chunked without its last chunk, a malformed chunk) nor, for a body that
    /// runs until the close, by the origin's clean close (a reset, an error, a TLS end without
    /// close_notify); or the idle or stall timer cut it. The client must not be able to take the
    /// part for the whole: its connection ends with a reset (``ByteStream/reset()``) once what was
    /// queued for it is written, never with a clean close. `reason` is
    /// ``Failure/responseTruncated``, its sentence with the body bytes relayed and the cause.
    case truncated(reason: FailureReason)
    /// The origin agreed to switch protocols (101, passed on): from here the bytes of both
    /// connections are the new protocol's, to be relayed as they come.
    case upgraded(protocol: String)
}

/// What an exchange moved, for the log record: bytes each way (heads included) and the status.
struct ExchangeTally {
    var bytesUp: Int64 = 0
    var bytesDown: Int64 = 0
    var status: Int?
    /// The final response's head as the origin sent it.
    var response: ResponseHead?
    /// The response head as the origin sent it (the final one's), and the bodies' own bytes each
    /// way (a chunked body's without its framing).
    var responseHeadBytes: Int64 = -1
    var requestBodyBytes: Int64 = 0
    var responseBodyBytes: Int64 = 0
    /// When the whole request had gone, and when the response's first byte came (``MonotonicClock``).
    var requestSentAt: Int64?
    var firstResponseByteAt: Int64?
}

/// The session as its exchange sees it: the client, the limits, the idle watch, and where the
/// exchange's end goes.
protocol ExchangeOwner: AnyObject {
    var client: any ByteStream { get }
    var settings: ProxySettings { get }
    /// The clock the exchange's timings are read from.
    var clock: any SessionClock { get }
    /// Whether the client half-closed (it may still read the answers to what it sent).
    var clientEnded: Bool { get }
    func clientHalfClosed()
    /// Calls the exchange's ``ClientBytesHandler/clientDrained()`` once the client's output falls to `mark`.
    func awaitClientDrained(to mark: Int)
    func watchIdle(_ streams: [any ByteStream], onIdle: @escaping (IdleTimer.Ending) -> Void)
    func closedReason(_ ending: IdleTimer.Ending) -> FailureReason
    /// Called once, when the exchange ends.
    func exchangeEnded(_ exchange: PlainHTTPExchange, _ ending: ExchangeEnding)
}
