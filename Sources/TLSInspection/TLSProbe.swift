import ATSPolicy
internal import COpenSSL
internal import CProxyShims
import Glibc
import POSIX

/// What one probe handshake showed.
package struct ProbeOutcome: Sendable {
    /// The facts of the completed handshake, or nil when it failed.
    package var observed: ObservedConnection?
    /// Why the handshake or the connection failed, when it did.
    package var failure: ProbeFailure?
    /// The certificates as the server sent them (leaf first), for display and pins.
    package var peerCertificates: [X509Certificate]
    /// The certificates behind `observed.chain`: the path to an anchor, or what was sent when none was built.
    package var path: [X509Certificate] = []
    /// Whether the handshake failed because the server closed the connection with no alert: Apple's
    /// client names that differently from a refused handshake (``HandshakeFailure``).
    package var serverClosedWithoutAlert = false

    package init(
        observed: ObservedConnection?, failure: ProbeFailure? = nil, peerCertificates: [X509Certificate],
        path: [X509Certificate] = [], serverClosedWithoutAlert: Bool = false
    ) {
        self.observed = observed
        self.failure = failure
        self.peerCertificates = peerCertificates
        self.path = path
        self.serverClosedWithoutAlert = serverClosedWithoutAlert
    }
}

/// One blocking TLS handshake with a time limit, as a given client profile: the building block of
/// the proxy's verdicts and of `atsproxyctl diagnose`. Runs on a probe thread, never on an event loop.
package enum TLSProbe {
    /// Connects to `host:port`, sends `serverName` as SNI (nil for an IP literal, as Apple's client
    /// sends none), and handshakes with `context`.
    package static func run(
        host: String, port: UInt16, serverName: String?, context: TLSClientContext, hosts: HostsTable? = nil,
        timeout: Duration = .seconds(10), now: Int64? = nil
    ) -> ProbeOutcome {
        let connection: TCPConnection
        do {
            connection = try TCPConnection.connect(host: host, port: port, hosts: hosts, timeout: timeout)
        } catch {
            return ProbeOutcome(observed: nil, failure: error, peerCertificates: [])
        }
        guard let session = BlockingHandshake(context: context, connection: connection, serverName: serverName) else {
            return ProbeOutcome(
                observed: nil, failure: .localResource(reason: TLSError.drainingQueue("SSL_new").description),
                peerCertificates: [])
        }
        return session.handshake(now: now ?? Int64(time(nil)))
    }
}

/// One handshake: the single owner of its `SSL*` (freed in `deinit`) and of the socket under it.
final class BlockingHandshake {
    let ssl: OpaquePointer
    private let context: TLSClientContext
    let connection: TCPConnection

    init?(context: TLSClientContext, connection: TCPConnection, serverName: String?) {
        guard let ssl = SSL_new(context.raw) else { return nil }
        self.ssl = ssl
        self.context = context
        self.connection = connection
        SSL_set_fd(ssl, connection.descriptor)
        if let serverName { _ = CProxyShims_SSL_set_tlsext_host_name(ssl, serverName) }
        // Ask for SCTs in the handshake (the signed_certificate_timestamp extension and OCSP
        // stapling), as Apple's client does, so delivered SCTs can be counted. Permissive: the
        // policy judges CT, not OpenSSL, whose log list would not be Apple's anyway.
        _ = SSL_enable_ct(ssl, Int32(SSL_CT_VALIDATION_PERMISSIVE))
    }

    deinit { SSL_free(ssl) }

    func handshake(now: Int64) -> ProbeOutcome {
        ERR_clear_error()
        let result = SSL_connect(ssl)
        let facts = CompletedHandshake(ssl: ssl, anchors: context.anchors)
        guard result == 1 else {
            let (failure, closed) = failure(result)
            var outcome = ProbeOutcome(observed: nil, failure: failure, peerCertificates: facts.peerCertificates())
            outcome.serverClosedWithoutAlert = closed
            return outcome
        }
        return facts.outcome(now: now)
    }

    /// The failure, and whether it was the server hanging up with no alert (an unexpected EOF).
    private func failure(_ result: Int32) -> (ProbeFailure, serverClosed: Bool) {
        let code = SSL_get_error(ssl, result)
        let savedErrno = errno
        let first = ERR_peek_error()
        let speaksCleartext =
            ERR_GET_LIB(first) == ERR_LIB_SSL
            && [SSL_R_WRONG_VERSION_NUMBER, SSL_R_PACKET_LENGTH_TOO_LONG].contains(ERR_GET_REASON(first))
        // OpenSSL 3 reports an EOF mid-handshake as this error; 1.1 as SSL_ERROR_SYSCALL with errno 0.
        let unexpectedEOF =
            ERR_GET_LIB(first) == ERR_LIB_SSL && ERR_GET_REASON(first) == SSL_R_UNEXPECTED_EOF_WHILE_READING
        let queue = TLSError.drainErrorQueue()
        if code == SSL_ERROR_SYSCALL, queue.isEmpty {
            if Errno.wouldBlock(savedErrno) { return (.timeout(stage: "the TLS handshake"), false) }
            if savedErrno == 0 { return (.handshake(reason: "the server closed the connection"), true) }
            return (.handshake(reason: Errno.message(savedErrno)), false)
        }
        let reason = queue.isEmpty ? "SSL_get_error \(code)" : queue.joined(separator: "; ")
        // The first record header was no TLS header: what came back is some other protocol.
        return speaksCleartext ? (.notTLS(reason: reason), false) : (.handshake(reason: reason), unexpectedEOF)
    }
}

extension TLSStream {
    /// What the completed handshake showed, judged at `now` (seconds since 1970); the certificates
    /// the server sent even when the handshake failed. A client's view: on a server stream, whose
    /// peer sends no certificate to judge, nothing is observed.
    package func outcome(now: Int64) -> ProbeOutcome {
        guard !isServer, let anchors else { return ProbeOutcome(observed: nil, peerCertificates: []) }
        let facts = CompletedHandshake(ssl: ssl, anchors: anchors)
        guard isHandshakeComplete else {
            return ProbeOutcome(observed: nil, peerCertificates: facts.peerCertificates())
        }
        return facts.outcome(now: now)
    }
}

extension X509Certificate {
    /// SCTs embedded in the certificate (the signed_certificate_timestamp_list extension).
    var embeddedSCTCount: Int {
        guard let list = X509_get_ext_d2i(raw, NID_ct_precert_scts, nil, nil) else { return 0 }
        let stack = OpaquePointer(list)
        defer { SCT_LIST_free(stack) }
        return Int(OPENSSL_sk_num(stack))
    }
}
