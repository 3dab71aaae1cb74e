import ATSPolicy
import EventLoop
import HTTP2
import LogRecord
import ProxyWire
import TLSInspection

/// An intercepted connection on which the origin chose HTTP/2 (and so the device was answered `h2`):
/// two libnghttp2 sessions, the proxy the server to the device and the client to the origin, and
/// every request stream relayed to a twin of its own on the origin's connection and logged as one
/// ``RequestRecord`` (`http_version` `HTTP/2`, its `stream_id`).
///
/// - Stream ids are the library's on each leg; ``streams`` maps the device's to the origin's.
/// - The origin's SETTINGS_MAX_CONCURRENT_STREAMS is respected: the library holds a request's HEADERS
///   until a stream closes.
/// - Flow control passes through: the bytes a leg receives open its window again only once the
///   other leg's session has framed them (``HTTP2Session/consumed(_:on:)``), so one connection holds
///   at most the windows it announced; a leg's output is drained only while its socket keeps up.
/// - Idle, or stalled (bytes wait and no body byte moves, ``checkStalls()``), for the idle timeout:
///   GOAWAY to both, then the end.
/// - RST_STREAM ends the twin; GOAWAY on one leg is passed on as a GOAWAY on the other; PING and
///   SETTINGS are the library's on each leg; no push reaches the device (the origin is told so in
///   SETTINGS); 1xx answers are passed on; trailers too (gRPC's status is in them, and on the line).
/// - A page-style block (`blocked`) answers every stream with the 403 page; nothing reaches the
///   origin. When the origin refused the proxy's own handshake there is no origin leg at all
///   (`origin` nil): the device alone speaks HTTP/2, to get its pages. RFC 8441's extended CONNECT is not offered to the device (so WebSockets use HTTP/1.1 on
///   a connection of their own), and a CONNECT stream gets a 405.
///
/// Loop-confined; owned by its ``InterceptedTunnel``.
final class HTTP2Relay {
    unowned let tunnel: ConnectTunnel
    let device: TLSByteStream
    /// nil only for a page-style block whose origin refused the proxy's handshake: every stream is
    /// then answered here, and the origin's session (made all the same) never speaks.
    let origin: TLSByteStream?
    let address: SocketAddress?
    let requestOrigin: RequestOrigin
    let blocked: Verdict?
    /// The proxy as the device's server, and as the origin's client. Set in `init`.
    private(set) var deviceSession: HTTP2Session!
    private(set) var originSession: HTTP2Session!
    /// The device's open streams, by their id on its connection.
    var streams: [Int32: RelayedStream] = [:]
    /// The device's stream id for each origin stream that is open.
    var deviceStreamID: [Int32: Int32] = [:]
    /// How many request streams the device opened.
    var requests = 0
    /// The app the last stream's User-Agent named.
    var userAgents = AppAgentMemo()
    /// A leg said GOAWAY: no new stream is relayed, and the connection ends once the open ones have.
    var goingAway = false
    private(set) var ended = false
    /// The connection is ending once the device has what it is owed (``endAfterFlush()``).
    private(set) var ending = false
    /// The device closed after its handshake, before any stream (its preface and SETTINGS are not a
    /// request): returns whether the owner took it as the device refusing the certificate (and
    /// ended the tunnel), as ``InterceptedExchanges/onClosedBeforeRequest`` does for HTTP/1.1.
    var onClosedBeforeRequest: (() -> Bool)?
    /// Why the connection ended, when not cleanly: the tunnel's line says it.
    private var failure: String?
    /// Looks for a connection whose bodies have stopped moving (``checkStalls()``).
    var stallWatch: (any LoopTimer)?
    /// Body bytes framed for either peer, and slices of a held output a peer's socket took.
    var bodyMovement = BodyMovement(now: 0)

    /// The most a leg's socket may hold unwritten before its session's output waits for it to drain.
    static let outputHighWater = 256 * 1024

    /// What every stream's line repeats of the connection's: settled before the relay starts (the
    /// verdicts and the action are the handshakes'), so made once rather than per stream (the
    /// upstream address's text among them). ``logStream(_:error:failure:)`` takes the action as it
    /// stands when a line is written.
    private(set) lazy var connectionFacts = tunnel.requestFacts(upstream: address)
    /// Every request URL's beginning, `https://host[:port]`: the connection's, made once.
    private(set) lazy var urlPrefix = "\(requestOrigin.scheme)://\(requestOrigin.authority)"
    /// The connection's authority as a request names it exactly, with its port and without.
    private(set) lazy var exactAuthorities = requestOrigin.exactAuthorities.map { Array($0.utf8) }

    var owner: any TunnelOwner { tunnel.owner }
    var settings: ProxySettings { owner.settings }
    /// The session's intercept settings (header logging), taken once: a session keeps the settings
    /// it started with, and reading them through the owner copies all of ``ProxySettings`` per stream.
    let interceptSettings: InterceptSettings
    var clock: any SessionClock { owner.environment.clock }

    init(
        tunnel: ConnectTunnel, device: TLSByteStream, origin: TLSByteStream?, address: SocketAddress?,
        requestOrigin: RequestOrigin, blocked: Verdict?
    ) throws(HTTP2Error) {
        precondition(origin != nil || blocked != nil, "an HTTP/2 relay without an origin answers every stream itself")
        self.tunnel = tunnel
        self.device = device
        self.origin = origin
        self.address = address
        self.requestOrigin = requestOrigin
        self.blocked = blocked
        interceptSettings = tunnel.owner.settings.intercept
        deviceSession = try HTTP2Session(role: .server, delegate: self)
        originSession = try HTTP2Session(role: .client, delegate: self)
        // A closed origin stream's bytes still queued for the device keep the origin's connection
        // window shut until the device takes them: the connection window bounds what is held.
        originSession.returnsUnconsumedOnClose = false
    }

    func start() {
        let legs = [(device, deviceSession!)] + (origin.map { [($0, originSession!)] } ?? [])
        for (stream, session) in legs {
            stream.setTimeouts(read: nil, write: nil)
            stream.onReadable = { [unowned self] _ in receive(from: stream, into: session) }
            stream.onEvent = { [unowned self] _, event in legEvent(event, on: stream) }
            stream.setReading(true)
        }
        watchIdle()
        watchStalls()
        // The SETTINGS (and the client's preface) of both sessions; then whatever came with the
        // device's handshake.
        receive(from: device, into: deviceSession)
        if let origin { receive(from: origin, into: originSession) }
    }

    /// Between streams, and with streams that move nothing, the idle timeout ends the connection
    /// with a GOAWAY, as it ends an idle HTTP/1.1 connection.
    private func watchIdle() {
        owner.watchIdle([device] + (origin.map { [$0] } ?? [])) { [unowned self] ending in
            tunnel.findings.fail(owner.closedReason(ending))
            goAwayBoth()
            endAfterFlush()
        }
    }

    // MARK: - Bytes

    /// Feeds a leg's session what its socket holds, then writes what both sessions have to say.
    private func receive(from stream: TLSByteStream, into session: HTTP2Session) {
        guard !ended else { return }
        let up = stream === device
        withUnsafeTemporaryAllocation(byteCount: 16 * 1024, alignment: 1) { buffer in
            while !ended, stream.availableBytes > 0 {
                let count = stream.takeInput(into: buffer)
                if up { tunnel.findings.bytesUp += Int64(count) } else { tunnel.findings.bytesDown += Int64(count) }
                do {
                    try session.receive(UnsafeRawBufferPointer(rebasing: buffer.prefix(count)))
                } catch {
                    // The library queued a GOAWAY naming the error: it goes out, the other peer is told
                    // the connection is going away, then it ends.
                    failure = "\(up ? "the device" : "the origin") broke HTTP/2: \(error)"
                    (up ? originSession : deviceSession).goAway(code: .noError)
                    break
                }
            }
        }
        flush()
        if failure != nil { return endAfterFlush() }
        endIfDone()
    }

    /// Writes what each session has to send, while its socket keeps up. Draining one session can
    /// give the other something to send (a WINDOW_UPDATE, a reset): both are drained until neither
    /// has more.
    func flush() {
        for _ in 0..<8 {
            let wroteToDevice = drain(deviceSession, to: device)
            let wroteToOrigin = origin.map { drain(originSession, to: $0) } ?? false
            guard wroteToDevice || wroteToOrigin else { return }
        }
    }

    /// Whether a leg's output waits for its socket to drain: then neither leg is read, so no peer can
    /// make a session queue what cannot be sent (responses to a device that does not read, requests
    /// to an origin that does not).
    private var outputHeld = false

    /// Writes what `session` has to send to `stream`; returns whether it wrote anything.
    @discardableResult
    private func drain(_ session: HTTP2Session, to stream: TLSByteStream) -> Bool {
        guard !ended, !ending, stream.isOpen else { return false }
        guard stream.pendingOutputBytes < Self.outputHighWater else {
            // The rest waits for the socket: the streams' bytes stay unframed, so the peers'
            // windows stay shut, and nothing is read meanwhile.
            outputHeld = true
            device.setReading(false)
            origin?.setReading(false)
            stream.onDrained = { [unowned self] drained in
                drained.onDrained = nil
                outputHeld = false
                // The peer is reading, if slowly: its stream bytes are on their way (``checkStalls()``).
                bodyMovement.note()
                flush()
                guard !outputHeld, !ended, !ending else { return }
                device.setReading(true)
                origin?.setReading(true)
                endIfDone()
            }
            stream.setDrainedMark(Self.outputHighWater / 2)
            return false
        }
        var pending: [UInt8] = []
        do {
            try session.drainOutput { bytes in
                // The frames, gathered for one TLS write, without regrowing for each of them.
                if pending.isEmpty { pending.reserveCapacity(max(4096, bytes.count)) }
                pending.append(contentsOf: bytes)
            }
        } catch {
            failure = "HTTP/2 to \(stream === device ? "the device" : "the origin"): \(error)"
        }
        // The lines of the streams these bytes end are in the log before the bytes leave.
        owner.environment.writeHeldLines()
        if !pending.isEmpty { stream.write(pending) }
        // The library ended the connection itself (a flood, a reset storm): the line says so, and
        // the other peer hears that the connection is going away.
        if failure == nil, let code = session.goAwaySent, code != .noError {
            let who = stream === device ? "the device" : "the origin"
            failure = "\(who) was sent GOAWAY \(code): it broke HTTP/2 or flooded the proxy"
            goingAway = true
            (session === deviceSession ? originSession : deviceSession).goAway(code: .noError)
        }
        return !pending.isEmpty
    }

    private func legEvent(_ event: StreamEvent, on stream: TLSByteStream) {
        let who = stream === device ? "the device" : "the origin"
        switch event {
        case .connected:
            return
        case .endOfStream:
            // What came before the end is read; then no stream on that leg can finish.
            receive(from: stream, into: stream === device ? deviceSession : originSession)
            guard !ended else { return }
            if stream === device, closedWithoutSpeaking, onClosedBeforeRequest?() == true { return }
            if stream === origin, !streams.isEmpty {
                failure = "the origin closed its connection with \(streams.count) stream(s) open"
            }
            if stream.endedCleanly == false { (stream === device ? origin : device)?.passOnTruncation() }
            goAwayBoth()
            endAfterFlush()
        case .error, .timeout:
            if stream === device, closedWithoutSpeaking, event != .timeout, onClosedBeforeRequest?() == true {
                return
            }
            failure = "\(who): \(event)"
            end()
        }
    }

    /// The device ended without a byte after its handshake. A device that sent its preface has
    /// accepted the certificate (an HTTP/2 client sends it at once): its early close is a preconnect
    /// or a lost race, not a refusal.
    private var closedWithoutSpeaking: Bool { requests == 0 && tunnel.findings.bytesUp == 0 }

    /// A GOAWAY on both legs: no new stream, and each side knows which of its streams were seen.
    func goAwayBoth() {
        goingAway = true
        deviceSession.goAway(code: .noError)
        originSession.goAway(code: .noError)
        flush()
    }

    /// Ends the connection once neither session has anything left to do (both said GOAWAY and their
    /// streams are over, or a peer has gone). Called after the sessions were fed and drained, never
    /// from inside one of their callbacks: ending frees them.
    func endIfDone() {
        guard !ended else { return }
        let deviceDone = !deviceSession.wantsRead && !deviceSession.wantsWrite
        let originDone = !originSession.wantsRead && !originSession.wantsWrite
        guard deviceDone || originDone, streams.isEmpty || deviceDone else { return }
        if originDone, !deviceDone { goAwayBoth() }
        endAfterFlush()
    }

    /// Ends once what each peer is owed has been written (or the write limit passes).
    func endAfterFlush() {
        guard !ended, !ending else { return }
        ending = true
        origin?.setReading(false)
        origin?.onReadable = nil
        device.whenFlushed(within: settings.idleTimeout) { [unowned self] in end() }
    }

    /// Closes both sessions and notes the count. Idempotent.
    func close() {
        guard !ended else { return }
        ended = true
        stallWatch?.cancel()
        stallWatch = nil
        tunnel.findings.requests = requests
        for id in Array(streams.keys) {
            logStream(id, error: "the connection ended before the stream was complete", failure: nil)
        }
        owner.environment.writeHeldLines()
        if let origin, origin.endedCleanly == false || origin.failure != nil { device.passOnTruncation() }
        if device.endedCleanly == false || device.failure != nil { origin?.passOnTruncation() }
        device.close()
        origin?.close()
    }

    func end() {
        if let failure, tunnel.findings.failure == nil {
            tunnel.findings.fail(FailureReason(.http2Error, failure))
        }
        close()
        owner.finish()
    }
}
