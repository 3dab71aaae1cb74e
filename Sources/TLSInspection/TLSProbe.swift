internal import COpenSSL
internal import CProxyShims
import Glibc
public import ATSPolicy

/// What one probe handshake showed.
public struct ProbeOutcome: Sendable {
    /// The facts of the completed handshake, or nil when it failed.
    public var observed: ObservedConnection?
    /// Why the handshake or the connection failed, when it did.
    public var failure: ProbeFailure?
    /// The certificates as the server sent them (leaf first), for display and pins.
    public var peerCertificates: [X509Certificate]
    /// The certificates behind `observed.chain`: the path to an anchor, or what was sent when none was built.
    public var path: [X509Certificate] = []
    /// Whether the handshake failed because the server closed the connection with no alert: Apple's
    /// client names that differently from a refused handshake (``HandshakeFailure``).
    public var serverClosedWithoutAlert = false
}

/// One blocking TLS handshake with a time limit, as a given client profile: the building block of
/// the proxy's verdicts and of `atsproxyctl diagnose`. Runs on a probe thread, never on an event loop.
public enum TLSProbe {
    /// Connects to `host:port`, sends `serverName` as SNI (nil for an IP literal, as Apple's client
    /// sends none), and handshakes with `context`.
    public static func run(
        host: String, port: UInt16, serverName: String?, context: TLSClientContext, hosts: HostsTable? = nil,
        timeout: Duration = .seconds(10), now: Int64? = nil
    ) -> ProbeOutcome {
        let connection: TCPConnection
        do {
            connection = try TCPConnection.connect(host: host, port: port, hosts: hosts, timeout: timeout)
        } catch {
            return ProbeOutcome(observed: nil, failure: error, peerCertificates: [])
        }
        guard let session = ProbeSession(context: context, connection: connection, serverName: serverName) else {
            return ProbeOutcome(observed: nil, failure: .handshake(reason: TLSError.drainingQueue("SSL_new").description),
                peerCertificates: [])
        }
        return session.handshake(now: now ?? Int64(time(nil)))
    }
}

/// One handshake: the single owner of its `SSL*` (freed in `deinit`) and of the socket under it.
final class ProbeSession {
    let ssl: OpaquePointer
    private let context: TLSClientContext
    let connection: TCPConnection
    private let record = VerificationRecord()

    init?(context: TLSClientContext, connection: TCPConnection, serverName: String?) {
        guard let ssl = SSL_new(context.raw) else { return nil }
        self.ssl = ssl
        self.context = context
        self.connection = connection
        SSL_set_fd(ssl, connection.descriptor)
        // The verify callback finds the record through the SSL's ex_data; `self` outlives the SSL.
        SSL_set_ex_data(ssl, verificationRecordIndex, Unmanaged.passUnretained(record).toOpaque())
        if let serverName { _ = CProxyShims_SSL_set_tlsext_host_name(ssl, serverName) }
        // Ask for SCTs in the handshake (the signed_certificate_timestamp extension and OCSP
        // stapling), as Apple's client does, so delivered SCTs can be counted. Permissive: the
        // policy judges CT, not OpenSSL, whose log list would not be Apple's anyway.
        _ = SSL_enable_ct(ssl, Int32(SSL_CT_VALIDATION_PERMISSIVE))
    }

    deinit {
        SSL_set_ex_data(ssl, verificationRecordIndex, nil)
        SSL_free(ssl)
    }

    func handshake(now: Int64) -> ProbeOutcome {
        ERR_clear_error()
        let result = SSL_connect(ssl)
        guard result == 1 else {
            let (failure, closed) = failure(result)
            var outcome = ProbeOutcome(observed: nil, failure: failure, peerCertificates: peerCertificates())
            outcome.serverClosedWithoutAlert = closed
            return outcome
        }
        let peer = peerCertificates()
        let path = verifiedPath() ?? peer
        let trust: ChainTrust
        if let reason = record.trustFailure {
            trust = .untrusted(reason: reason)
        } else if let anchor = path.last, context.anchors.isUserInstalled(anchor) {
            trust = .userInstalledRoot
        } else if path.isEmpty {
            trust = .untrusted(reason: "the server sent no certificate")
        } else {
            trust = .systemRoot
        }
        let cipher = SSL_get_current_cipher(ssl).map { CipherSuite(id: SSL_CIPHER_get_protocol_id($0)) }
        let version = TLSVersion(wireValue: UInt16(truncatingIfNeeded: SSL_version(ssl)))
        let observed = ObservedConnection(
            tlsVersion: version, cipherSuite: cipher,
            extendedMasterSecret: version == .tls13 ? true : CProxyShims_SSL_get_extms_support(ssl) == 1,
            serverSignatureScheme: peerSignatureDigest().map { "digest \($0)" },
            chain: path.map(\.facts), trust: trust, embeddedSCTs: path.first?.embeddedSCTCount ?? 0,
            deliveredSCTs: deliveredSCTCount(), evaluationTime: now)
        return ProbeOutcome(observed: observed, failure: nil, peerCertificates: peer, path: path)
    }

    /// SCTs the server delivered in the TLS extension or a stapled OCSP response (embedded ones are
    /// counted from the certificate).
    private func deliveredSCTCount() -> Int {
        guard let list = SSL_get0_peer_scts(ssl) else { return 0 }
        return (0..<OPENSSL_sk_num(list)).count { index in
            guard let sct = OPENSSL_sk_value(list, index) else { return false }
            return SCT_get_source(OpaquePointer(sct)) != SCT_SOURCE_X509V3_EXTENSION
        }
    }

    /// The chain OpenSSL built to an anchor (leaf first), when it built one.
    private func verifiedPath() -> [X509Certificate]? {
        guard let stack = SSL_get0_verified_chain(ssl), OPENSSL_sk_num(stack) > 0 else { return nil }
        return (0..<OPENSSL_sk_num(stack)).compactMap { index in
            OPENSSL_sk_value(stack, index).map { X509Certificate(retaining: OpaquePointer($0)) }
        }
    }

    /// The certificates the server sent.
    private func peerCertificates() -> [X509Certificate] {
        guard let stack = SSL_get_peer_cert_chain(ssl) else { return [] }
        return (0..<OPENSSL_sk_num(stack)).compactMap { index in
            OPENSSL_sk_value(stack, index).map { X509Certificate(retaining: OpaquePointer($0)) }
        }
    }

    private func peerSignatureDigest() -> String? {
        var nid: Int32 = NID_undef
        guard CProxyShims_SSL_get_peer_signature_nid(ssl, &nid) == 1, nid != NID_undef, let name = OBJ_nid2sn(nid) else {
            return nil
        }
        return String(cString: name)
    }

    /// The failure, and whether it was the server hanging up with no alert (an unexpected EOF).
    private func failure(_ result: Int32) -> (ProbeFailure, serverClosed: Bool) {
        let code = SSL_get_error(ssl, result)
        let savedErrno = errno
        let first = ERR_peek_error()
        let speaksCleartext = ERR_GET_LIB(first) == ERR_LIB_SSL
            && [SSL_R_WRONG_VERSION_NUMBER, SSL_R_PACKET_LENGTH_TOO_LONG].contains(ERR_GET_REASON(first))
        // OpenSSL 3 reports an EOF mid-handshake as this error; 1.1 as SSL_ERROR_SYSCALL with errno 0.
        let unexpectedEOF = ERR_GET_LIB(first) == ERR_LIB_SSL && ERR_GET_REASON(first) == SSL_R_UNEXPECTED_EOF_WHILE_READING
        let queue = TLSError.drainErrorQueue()
        if code == SSL_ERROR_SYSCALL, queue.isEmpty {
            if savedErrno == EAGAIN || savedErrno == EWOULDBLOCK { return (.timeout(stage: "the TLS handshake"), false) }
            if savedErrno == 0 { return (.handshake(reason: "the server closed the connection"), true) }
            return (.handshake(reason: String(cString: strerror(savedErrno))), false)
        }
        let reason = queue.isEmpty ? "SSL_get_error \(code)" : queue.joined(separator: "; ")
        // The first record header was no TLS header: what came back is some other protocol.
        return speaksCleartext ? (.notTLS(reason: reason), false) : (.handshake(reason: reason), unexpectedEOF)
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
