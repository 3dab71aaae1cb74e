import ATSPolicy
internal import COpenSSL
internal import CProxyShims

/// An `SSL_CTX` for the server end of a ``TLSStream``: the device's leg of an intercepted tunnel,
/// which must look like a server an ATS client accepts. The single owner of the context, freed in
/// `deinit`; made once per configuration and shared by every stream of it, on any thread (per-
/// connection contexts are slow on OpenSSL 3.0, openssl#17064).
///
/// What it speaks (what an iPhone offers and ATS accepts; docs/intercept.md):
/// - TLS 1.2 and 1.3 only (a narrower range for tests);
/// - TLS 1.2: the forward-secret AEAD suites of ATS's list, ECDHE-ECDSA first, in the server's
///   order; TLS 1.3: the three suites Apple's clients offer;
/// - groups X25519, P-256, P-384;
/// - no session tickets and no session cache: every handshake is full (resumption is to be
///   measured before it is turned on);
/// - the client's SNI acknowledged, as a real server does.
///
/// The certificate is either the context's (``init(versions:credentials:)``) or each stream's
/// (``TLSStream/Role/server(credentials:)``). Nothing here pauses a handshake; a ClientHello
/// callback (`SSL_CTX_set_client_hello_cb`) can be added later without changing the streams.
package final class TLSServerContext: @unchecked Sendable {
    let raw: OpaquePointer
    /// The certificate streams present unless given their own.
    package let credentials: ServerCredentials?

    /// The TLS 1.2 suites offered: ATS's forward-secret list without its CBC suites.
    package static let tls12Suites = CipherProfile.current.forwardSecretSuites.filter { suite in
        guard let name = suite.openSSLName else { return false }
        return name.contains("GCM") || name.contains("CHACHA20")
    }
    /// The TLS 1.3 suites offered.
    package static let tls13Suites = CipherProfile.tls13Suites
    /// The key-exchange groups, most preferred first.
    package static let groups = "X25519:P-256:P-384"

    /// - Parameters:
    ///   - versions: within TLS 1.2...1.3; narrower only to make a server a client must refuse.
    ///   - credentials: what every stream presents unless it brings its own; nil when each does.
    package init(versions: ClosedRange<TLSVersion> = .tls12 ... .tls13, credentials: ServerCredentials? = nil)
        throws(TLSError)
    {
        guard versions.lowerBound >= .tls12, versions.upperBound <= .tls13 else {
            throw TLSError(
                operation: "making a server context", openSSLErrors: ["TLS 1.2 and 1.3 only, not \(versions)"])
        }
        guard let method = TLS_server_method(), let context = SSL_CTX_new(method) else {
            throw TLSError.drainingQueue("SSL_CTX_new")
        }
        raw = context
        self.credentials = credentials
        // From here a throw runs deinit, which frees the context.
        guard CProxyShims_SSL_CTX_set_min_proto_version(context, Int32(versions.lowerBound.wireValue)) == 1,
            CProxyShims_SSL_CTX_set_max_proto_version(context, Int32(versions.upperBound.wireValue)) == 1
        else { throw TLSError.drainingQueue("setting the TLS version range") }
        let tls12 = Self.tls12Suites.compactMap(\.openSSLName).joined(separator: ":")
        guard SSL_CTX_set_cipher_list(context, tls12) == 1 else {
            throw TLSError.drainingQueue("setting the TLS 1.2 suites \(tls12)")
        }
        let tls13 = Self.tls13Suites.compactMap(\.openSSLName).joined(separator: ":")
        guard SSL_CTX_set_ciphersuites(context, tls13) == 1 else {
            throw TLSError.drainingQueue("setting the TLS 1.3 suites \(tls13)")
        }
        guard CProxyShims_SSL_CTX_set1_groups_list(context, Self.groups) == 1 else {
            throw TLSError.drainingQueue("setting the key-exchange groups \(Self.groups)")
        }
        // TLS 1.3 sends two tickets after each handshake by default; TLS 1.2 needs the option.
        guard SSL_CTX_set_num_tickets(context, 0) == 1 else { throw TLSError.drainingQueue("SSL_CTX_set_num_tickets") }
        _ = SSL_CTX_set_options(context, CProxyShims_SSL_OP_NO_TICKET() | CProxyShims_SSL_OP_CIPHER_SERVER_PREFERENCE())
        _ = CProxyShims_SSL_CTX_set_session_cache_mode(context, Int(SSL_SESS_CACHE_OFF))
        // Without a callback OpenSSL does not acknowledge the client's server_name; real servers do.
        _ = CProxyShims_SSL_CTX_set_tlsext_servername_callback(context) { _, _, _ in SSL_TLSEXT_ERR_OK }
        // An intercepted tunnel holds two sessions for as long as the device keeps it open, mostly
        // idle: their record buffers are freed between records (a malloc per record in exchange).
        _ = CProxyShims_SSL_CTX_release_buffers(context)
        // The stream's own answer (an intercepted device gets what its origin chose), else HTTP/1.1
        // when the client offers it; no ALPN otherwise (not a refusal, see ``selectApplicationProtocol``).
        SSL_CTX_set_alpn_select_cb(context, selectApplicationProtocol, nil)
        if let credentials {
            try credentials.install("installing the server certificate") {
                SSL_CTX_use_cert_and_key(context, $0, $1, $2, 1)
            }
        }
        ERR_clear_error()
    }

    deinit { SSL_CTX_free(raw) }
}

/// The ALPN select callback of every server context: the stream's own answer when it has one
/// (``TLSStream/answerApplicationProtocol(_:)``), else `http/1.1`, when the client offered it; else no
/// ALPN at all (SSL_TLSEXT_ERR_NOACK: the handshake goes on without it, as with a server that knows
/// no ALPN).
private func selectApplicationProtocol(
    _ ssl: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
    _ outLength: UnsafeMutablePointer<UInt8>?,
    _ offered: UnsafePointer<UInt8>?, _ offeredLength: UInt32, _ argument: UnsafeMutableRawPointer?
) -> Int32 {
    guard let offered, let out, let outLength else { return SSL_TLSEXT_ERR_NOACK }
    var wanted = TLSServerContext.http1
    if let ssl, let stored = SSL_get_ex_data(ssl, ApplicationProtocolAnswer.index) {
        guard let name = Unmanaged<ApplicationProtocolAnswer>.fromOpaque(stored).takeUnretainedValue().name else {
            return SSL_TLSEXT_ERR_NOACK
        }
        wanted = name
    }
    let list = UnsafeBufferPointer(start: offered, count: Int(offeredLength))
    guard let start = ApplicationProtocols.find(wanted, in: list) else { return SSL_TLSEXT_ERR_NOACK }
    out.pointee = offered + start
    outLength.pointee = UInt8(wanted.count)
    return SSL_TLSEXT_ERR_OK
}

extension TLSServerContext {
    static let http1 = Array("http/1.1".utf8)
}
