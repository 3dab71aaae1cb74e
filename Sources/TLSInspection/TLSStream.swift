import ATSPolicy
internal import COpenSSL
internal import CProxyShims

/// One TLS session over a ``CiphertextTransport``, driven by its owner's events and never blocking:
/// the single owner of its `SSL` (freed in `deinit`), which owns the BIO under it.
///
/// The owner calls ``handshake()`` until it is complete, then ``read(into:)`` whenever ciphertext
/// arrives and ``write(_:)`` for its own bytes. Each call asks OpenSSL for as much as the bytes
/// already received allow and returns; "needs more bytes" is an answer, not a wait. Every call that
/// may have written flushes the transport before it returns, failures included, so the peer gets
/// the alert that explains a failed handshake.
///
/// Both ends of a connection, with the same calls: a client (the proxy's probes and upstream legs,
/// over a ``TLSClientContext``) and a server (the device's leg of an intercepted tunnel, over a
/// ``TLSServerContext``). Contexts are shared by every stream of one configuration; each stream has
/// only its `SSL`.
///
/// Not thread-safe: one stream belongs to one event loop (or one test).
package final class TLSStream {
    /// What the stream is on its connection.
    package enum Role: Sendable {
        /// The connecting side, sending `serverName` as SNI (nil: none, as for an IP literal). Made
        /// with a ``TLSClientContext``.
        case client(serverName: String?)
        /// The accepting side, presenting `credentials`, or its context's when nil. Made with a
        /// ``TLSServerContext``.
        case server(credentials: ServerCredentials?)
    }

    /// Where a handshake stands after a call to ``handshake()``.
    package enum HandshakeProgress: Equatable, Sendable {
        /// Both sides finished: the facts can be read, plaintext can flow.
        case complete
        /// OpenSSL waits for the peer's next bytes; call again when they arrive.
        case needsBytes
    }

    /// What a call to ``read(into:)`` found.
    package enum PlaintextRead: Equatable, Sendable {
        /// This many plaintext bytes were written to the buffer (at least one).
        case bytes(Int)
        /// No whole record yet; call again when bytes arrive.
        case needsBytes
        /// The peer ended the session: `clean` when it sent close_notify first, not when the
        /// connection just ended (a truncation, which a relay must pass on as one).
        case ended(clean: Bool)
    }

    let ssl: OpaquePointer
    let transport: any CiphertextTransport
    /// The anchors a client stream's peer is judged against; nil for a server stream, whose client
    /// sends no certificate.
    let anchors: TrustAnchors?
    /// Which end this is, for the words of errors.
    let isServer: Bool
    /// A server stream's ALPN answer, when the owner chose one (``answerApplicationProtocol(_:)``):
    /// the SSL's ex_data points at it, so it lives as long as the SSL does.
    var applicationProtocolAnswer: ApplicationProtocolAnswer?
    private var phase = Phase.handshaking
    /// Our close_notify went out: no more writes from us, but the peer may go on sending until
    /// its own (a half-close, which a relay passes on one direction at a time).
    private var sentCloseNotify = false

    private enum Phase: Equatable {
        case handshaking
        case open
        /// The peer's side ended: cleanly with close_notify (we may still write and answer with
        /// ours), or not (a truncation, fatal to OpenSSL: nothing more either way).
        case peerEnded(clean: Bool)
        /// A fatal error: OpenSSL forbids SSL_shutdown after one.
        case failed
    }

    /// A client stream over `transport`, ready for ``handshake()``.
    /// - Throws: for a `.server` role (which needs a ``TLSServerContext``), or when OpenSSL fails.
    package convenience init(role: Role, context: TLSClientContext, transport: any CiphertextTransport) throws(TLSError)
    {
        guard case .client = role else {
            throw TLSError(
                operation: "making a TLS stream", openSSLErrors: ["a server stream needs a TLSServerContext"])
        }
        try self.init(role: role, context: context.raw, anchors: context.anchors, transport: transport)
    }

    /// A server stream over `transport`, ready for ``handshake()`` once the client's first bytes
    /// can be received.
    /// - Throws: for a `.client` role (which needs a ``TLSClientContext``), when neither the role
    ///   nor the context has credentials, or when OpenSSL fails.
    package convenience init(role: Role, context: TLSServerContext, transport: any CiphertextTransport) throws(TLSError)
    {
        guard case .server(let credentials) = role else {
            throw TLSError(
                operation: "making a TLS stream", openSSLErrors: ["a client stream needs a TLSClientContext"])
        }
        guard credentials != nil || context.credentials != nil else {
            throw TLSError(
                operation: "making a TLS stream", openSSLErrors: ["a server stream needs a certificate and key"])
        }
        // A server verifies no client certificates: no anchors.
        try self.init(role: role, context: context.raw, anchors: nil, transport: transport)
    }

    private init(role: Role, context: OpaquePointer, anchors: TrustAnchors?, transport: any CiphertextTransport)
        throws(TLSError)
    {
        guard let method = TransportBIOMethod.shared.raw else { throw TLSError.drainingQueue("BIO_meth_new") }
        guard let ssl = SSL_new(context) else { throw TLSError.drainingQueue("SSL_new") }
        guard let bio = BIO_new(method) else {
            SSL_free(ssl)
            throw TLSError.drainingQueue("BIO_new")
        }
        self.ssl = ssl
        self.transport = transport
        self.anchors = anchors
        isServer = if case .server = role { true } else { false }
        // From here a throw runs deinit, the one place the SSL (and the BIO it owns) is freed.
        BIO_set_data(bio, Unmanaged.passUnretained(self).toOpaque())
        // One BIO both ways: SSL_set_bio takes a single reference when both are the same.
        SSL_set_bio(ssl, bio, bio)
        switch role {
        case .client(let serverName):
            SSL_set_connect_state(ssl)
            if let serverName { _ = CProxyShims_SSL_set_tlsext_host_name(ssl, serverName) }
            // Ask for SCTs (the extension and OCSP stapling) as Apple's client does; permissive, so
            // the policy and not OpenSSL's log list judges them.
            _ = SSL_enable_ct(ssl, Int32(SSL_CT_VALIDATION_PERMISSIVE))
        case .server(let credentials):
            SSL_set_accept_state(ssl)
            // Replaces the context's certificate for this stream only: a leaf per host.
            try credentials?.install("installing the stream's certificate") { SSL_use_cert_and_key(ssl, $0, $1, $2, 1) }
        }
    }

    deinit { SSL_free(ssl) }

    /// The anchors a client stream's peer is judged against (nil for a server stream).
    package var trustAnchors: TrustAnchors? { anchors }

    /// Whether the handshake has completed.
    package var isHandshakeComplete: Bool {
        switch phase {
        case .open, .peerEnded: true
        case .handshaking, .failed: false
        }
    }

    /// Whether ``write(_:)`` and ``shutdown()`` may still send: open, or the peer's clean end read.
    private var maySend: Bool { (phase == .open || phase == .peerEnded(clean: true)) && !sentCloseNotify }

    /// Takes the handshake as far as the received bytes allow.
    package func handshake() throws(TLSStreamError) -> HandshakeProgress {
        guard phase == .handshaking else {
            if phase == .failed { throw TLSStreamError(kind: .internalError, reason: "the session already failed") }
            return .complete
        }
        ERR_clear_error()  // The queue is per thread: a leftover would be blamed on this call.
        let result = SSL_do_handshake(ssl)
        transport.flushCiphertext()
        if result == 1 {
            phase = .open
            return .complete
        }
        let code = SSL_get_error(ssl, result)
        if code == SSL_ERROR_WANT_READ { return .needsBytes }
        throw fail(code)
    }

    /// Decrypts what the received bytes hold, up to `buffer.count` bytes. Call until it answers
    /// `.needsBytes`: one call returns at most one record's plaintext, and more may be buffered
    /// (a TLS 1.3 server's session tickets are consumed here too). Reading goes on after our own
    /// ``shutdown()``, until the peer's end; once ended, every call answers `.ended` again.
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws(TLSStreamError) -> PlaintextRead {
        switch phase {
        case .handshaking: return .needsBytes
        case .failed: throw TLSStreamError(kind: .internalError, reason: "the session already failed")
        case .peerEnded(let clean): return .ended(clean: clean)
        case .open: break
        }
        guard let base = buffer.baseAddress, buffer.count > 0 else { return .needsBytes }
        ERR_clear_error()
        let result = SSL_read(ssl, base, Int32(clamping: buffer.count))
        transport.flushCiphertext()  // A key update or an alert may have been written.
        if result > 0 { return .bytes(Int(result)) }
        let code = SSL_get_error(ssl, result)
        switch code {
        case SSL_ERROR_WANT_READ:
            return .needsBytes
        case SSL_ERROR_ZERO_RETURN:
            phase = .peerEnded(clean: true)
            return .ended(clean: true)
        default:
            let error = fail(code)
            guard error.kind == .peerClosed else { throw error }
            phase = .peerEnded(clean: false)
            return .ended(clean: false)
        }
    }

    /// Encrypts and queues all of `bytes` (the transport never refuses a write). Refused before
    /// the handshake completes, after our ``shutdown()``, after a truncation or a failure; allowed
    /// after the peer's close_notify (its half-close).
    package func write(_ bytes: UnsafeRawBufferPointer) throws(TLSStreamError) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        guard maySend else {
            let why = sentCloseNotify ? "after close_notify was sent" : "on a session that is not open"
            throw TLSStreamError(kind: .internalError, reason: "writing \(why)")
        }
        ERR_clear_error()
        let result = SSL_write(ssl, base, Int32(clamping: bytes.count))
        transport.flushCiphertext()
        guard result == Int32(clamping: bytes.count) else { throw fail(SSL_get_error(ssl, result)) }
    }

    /// Queues close_notify, once, and flushes it; nothing after a failure or a truncation (OpenSSL
    /// forbids it), and nothing before the handshake completed (the peer gets a plain close).
    /// Does not wait for the peer's: ``read(into:)`` reports it when it comes.
    package func shutdown() {
        guard maySend else { return }
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        transport.flushCiphertext()
        ERR_clear_error()
        sentCloseNotify = true
    }

    /// Drains OpenSSL's queue into the error for `code`, and marks the session failed.
    private func fail(_ code: Int32) -> TLSStreamError {
        phase = .failed
        let first = ERR_peek_error()
        let isSSL = ERR_GET_LIB(first) == ERR_LIB_SSL
        let queue = TLSError.drainErrorQueue()
        if code == SSL_ERROR_SYSCALL, queue.isEmpty {
            // The transport ended with no TLS error recorded: the peer closed without an alert.
            return TLSStreamError(
                kind: .peerClosed, reason: "the \(isServer ? "client" : "server") closed the connection")
        }
        let reason = queue.isEmpty ? "SSL_get_error \(code)" : queue.joined(separator: "; ")
        if isSSL, ERR_GET_REASON(first) == SSL_R_UNEXPECTED_EOF_WHILE_READING {
            return TLSStreamError(kind: .peerClosed, reason: reason)
        }
        // The first record header was no TLS header: the peer speaks some other protocol.
        if isSSL, [SSL_R_WRONG_VERSION_NUMBER, SSL_R_PACKET_LENGTH_TOO_LONG].contains(ERR_GET_REASON(first)) {
            return TLSStreamError(kind: .notTLS, reason: reason)
        }
        return TLSStreamError(
            kind: code == SSL_ERROR_SSL ? .refused : .internalError, reason: reason,
            cause: isSSL ? Self.cause(ofReason: ERR_GET_REASON(first)) : .other)
    }

    /// What an SSL library reason code names: an alert from the peer (OpenSSL numbers those from
    /// `SSL_AD_REASON_OFFSET`, 1000 + the alert's description), or no version or suite in common.
    static func cause(ofReason reason: Int32) -> TLSStreamError.Cause {
        switch reason {
        case SSL_AD_REASON_OFFSET...(SSL_AD_REASON_OFFSET + 255): .peerAlert(UInt8(reason - SSL_AD_REASON_OFFSET))
        case SSL_R_UNSUPPORTED_PROTOCOL, SSL_R_VERSION_TOO_LOW, SSL_R_NO_PROTOCOLS_AVAILABLE: .noSharedVersion
        case SSL_R_NO_SHARED_CIPHER, SSL_R_NO_SUITABLE_KEY_SHARE, SSL_R_NO_SHARED_GROUPS: .noSharedCipher
        default: .other
        }
    }
}
