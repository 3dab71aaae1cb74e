import EventLoop
import Glibc
import TLSInspection

/// One probe handshake on the loop, over a connected socket, as one client profile: the TLS
/// client an ATS app would be, or the permissive one that finds out why that one failed.
///
/// The handshake must complete by `deadline` (``MonotonicClock`` milliseconds), fixed before it
/// starts and never moved by progress: a server that sends one byte every second is cut off as
/// surely as a silent one. The probe owns its connection and closes it when it ends, whatever the
/// outcome, except that a probe made with `keepsConnection` hands a completed one on to whoever
/// takes it in the completion (``takeConnection()``), for a request over it; ``cancel()`` ends it
/// without a completion.
final class HandshakeProbe {
    private let base: EventBase
    private let connection: SocketStream
    private let stream: TLSStream
    private let deadline: Int64
    private let handshakeLimit: Duration
    private var timer: Timer?
    private var completion: ((ProbeOutcome) -> Void)?
    /// Ciphertext the server sent, to tell a silent server from a slow one when time runs out.
    private var bytesReceived = 0
    private let keepsConnection: Bool
    /// Called once, when the server's first bytes arrive: it is serving this connection.
    var onFirstBytes: (() -> Void)?
    /// The completed connection, from the moment it is handed on until the completion has run.
    private var handedOn: OpenTLSConnection?

    /// - Parameters:
    ///   - deadline: when the handshake must be complete (``MonotonicClock`` milliseconds).
    ///   - handshakeLimit: the limit behind `deadline`, for the words of a timeout.
    ///   - keepsConnection: a completed handshake's connection is left open for ``takeConnection()``
    ///     rather than closed with a close_notify.
    init(
        base: EventBase, connection: SocketStream, context: TLSClientContext, serverName: String?, deadline: Int64,
        handshakeLimit: Duration, keepsConnection: Bool = false
    ) throws(TLSError) {
        self.keepsConnection = keepsConnection
        self.base = base
        self.connection = connection
        self.deadline = deadline
        self.handshakeLimit = handshakeLimit
        stream = try TLSStream(
            role: .client(serverName: serverName), context: context, transport: StreamTransport(connection))
    }

    /// Sends the ClientHello and calls `completion` once, from the loop, with what the handshake
    /// showed or why it failed.
    func start(completion: @escaping (ProbeOutcome) -> Void) {
        self.completion = completion
        let left = deadline - MonotonicClock.nowMilliseconds()
        guard left > 0, let timer = try? Timer(base: base, onFire: { [unowned self] in timedOut() }) else {
            return finish(ProbeOutcome(observed: nil, failure: .deadline(reason: silenceReason), peerCertificates: []))
        }
        self.timer = timer
        timer.schedule(after: .milliseconds(left))
        connection.onReadable = { [unowned self] connection in
            if bytesReceived == 0, connection.availableBytes > 0, let first = onFirstBytes {
                onFirstBytes = nil
                first()
            }
            bytesReceived += connection.availableBytes
            advance()
        }
        connection.onEvent = { [unowned self] _, event in
            switch event {
            // The end is in the input now: the stream reads it as the server's close.
            case .endOfStream: advance()
            case .error(let code):
                finish(
                    ProbeOutcome(
                        observed: nil, failure: .connectionLost(reason: String(cString: strerror(code))),
                        peerCertificates: stream.outcome(now: 0).peerCertificates))
            case .connected, .timeout: break
            }
        }
        connection.setReading(true)
        advance()
    }

    /// In the completion of a probe made with `keepsConnection`, after a completed handshake: the
    /// connection and its TLS session, which the caller owns from then on (and must close). Untaken,
    /// the probe closes it once the completion returns.
    func takeConnection() -> OpenTLSConnection? {
        defer { handedOn = nil }
        return handedOn
    }

    /// Stops the probe without calling its completion (its requester went away and nobody waits).
    func cancel() {
        completion = nil
        end()
    }

    private func advance() {
        guard completion != nil else { return }
        do {
            guard try stream.handshake() == .complete else { return }
            let outcome = stream.outcome(now: Int64(time(nil)))
            if keepsConnection {
                handedOn = OpenTLSConnection(connection: connection, stream: stream)
            } else {
                stream.shutdown()  // A polite close_notify: the probe asked for nothing else.
            }
            finish(outcome)
        } catch {
            var outcome = ProbeOutcome(
                observed: nil, failure: Self.failure(error), peerCertificates: stream.outcome(now: 0).peerCertificates)
            outcome.serverClosedWithoutAlert = error.kind == .peerClosed
            finish(outcome)
        }
    }

    private static func failure(_ error: TLSStreamError) -> ProbeFailure {
        switch error.kind {
        case .notTLS: .notTLS(reason: error.reason)
        case .refused, .peerClosed, .internalError: .handshake(reason: error.reason)
        }
    }

    private func timedOut() {
        finish(ProbeOutcome(observed: nil, failure: .deadline(reason: silenceReason), peerCertificates: []))
    }

    /// The words for a handshake out of time: a server that said nothing is told from one that was slow.
    private var silenceReason: String {
        bytesReceived == 0
            ? "upstream sent no TLS handshake in \(handshakeLimit.logText)"
            : "upstream did not complete the TLS handshake in \(handshakeLimit.logText) (\(bytesReceived) bytes received)"
    }

    private func finish(_ outcome: ProbeOutcome) {
        let completion = self.completion
        self.completion = nil
        end()
        completion?(outcome)
        if let untaken = takeConnection() { untaken.connection.close() }
    }

    private func end() {
        timer?.cancel()
        timer = nil
        guard handedOn == nil else {
            // Handed on: the probe's callbacks go, the connection stays open for its taker.
            connection.onReadable = nil
            connection.onEvent = nil
            connection.setReading(false)
            return
        }
        connection.close()
    }
}

/// A client connection whose handshake completed, handed on by its ``HandshakeProbe``: the one
/// TLS session over the one socket, owned by whoever took them.
struct OpenTLSConnection {
    let connection: SocketStream
    let stream: TLSStream
}
