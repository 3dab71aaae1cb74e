internal import COpenSSL

/// A client's TLS session that a later handshake with the same server may resume: the single owner
/// of one `SSL_SESSION` reference, freed in `deinit`. Immutable once taken, so it may be kept and
/// handed to any stream of the same client context (OpenSSL takes its own reference on resuming).
package final class TLSSession: @unchecked Sendable {
    let raw: OpaquePointer

    init(taking raw: OpaquePointer) { self.raw = raw }

    deinit { SSL_SESSION_free(raw) }
}

/// Resumption, client side: what an intercepted tunnel's upstream leg uses so that a host the
/// proxy has just talked to is not asked for a full handshake every time (as an iPhone resumes its
/// own sessions).
extension TLSStream {
    /// Offers `session` in the ClientHello: before the first ``handshake()`` of a client stream
    /// made from the same context as the stream that took it. The server may decline (a full
    /// handshake follows; ``wasResumed`` tells).
    package func offer(_ session: TLSSession) {
        _ = SSL_set_session(ssl, session.raw)
    }

    /// Whether the completed handshake resumed an offered session: no certificates were sent.
    package var wasResumed: Bool { isHandshakeComplete && SSL_session_reused(ssl) == 1 }

    /// The session as it stands, when a later handshake could resume it. Under TLS 1.3 that is
    /// only once the server's ticket has been read, after the handshake: ask when the connection
    /// is done with.
    package var resumableSession: TLSSession? {
        guard isHandshakeComplete, let session = SSL_get1_session(ssl) else { return nil }
        guard SSL_SESSION_is_resumable(session) == 1 else {
            SSL_SESSION_free(session)
            return nil
        }
        return TLSSession(taking: session)
    }
}
