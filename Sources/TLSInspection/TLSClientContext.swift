import ATSPolicy
internal import COpenSSL
internal import CProxyShims

/// An `SSL_CTX` configured as one client profile with one set of anchors: the single owner of the
/// context, freed in `deinit`. Contexts are reference-counted by OpenSSL and safe to share between
/// threads once configured, which is why this may be cached and reused.
package final class TLSClientContext: @unchecked Sendable {
    let raw: OpaquePointer
    let anchors: TrustAnchors
    /// Whether the hello offers X25519MLKEM768 with its key share (an iOS 26 profile, OpenSSL 3.5 or later).
    package private(set) var offersPostQuantum = false
    /// The length of the padding extension's body the hello carries, 0 for none (an iOS 26 profile
    /// over an OpenSSL without ML-KEM).
    package private(set) var helloPadding = 0

    package init(profile: ClientProfile, anchors: TrustAnchors) throws(TLSError) {
        guard let method = TLS_client_method(), let context = SSL_CTX_new(method) else {
            throw TLSError.drainingQueue("SSL_CTX_new")
        }
        raw = context
        self.anchors = anchors
        // Security level 0: weak keys and SHA-1 chains must complete the handshake so the ATS policy
        // can name them; OpenSSL's own refusal would hide the reason.
        SSL_CTX_set_security_level(context, 0)
        guard CProxyShims_SSL_CTX_set_min_proto_version(context, Int32(profile.minimumVersion.wireValue)) == 1,
            CProxyShims_SSL_CTX_set_max_proto_version(context, Int32(profile.maximumVersion.wireValue)) == 1
        else { throw TLSError.drainingQueue("setting the TLS version range") }
        guard SSL_CTX_set_cipher_list(context, profile.openSSLCipherList) == 1 || profile.tls12Suites.isEmpty else {
            throw TLSError.drainingQueue("setting the TLS 1.2 suites \(profile.openSSLCipherList)")
        }
        if profile.isPermissive, !profile.excludedSuites.isEmpty {
            try Self.exclude(profile.excludedSuites, from: context)
        }
        if let algorithms = profile.openSSLSignatureAlgorithms,
            CProxyShims_SSL_CTX_set1_sigalgs_list(context, algorithms) != 1
        {
            throw TLSError.drainingQueue("setting the signature algorithms \(algorithms)")
        }
        if profile.hello == .postQuantum {
            offersPostQuantum = ClientProfile.postQuantumGroupLists.contains {
                CProxyShims_SSL_CTX_set1_groups_list(context, $0) == 1
            }
        }
        if !offersPostQuantum, let groups = profile.openSSLGroups,
            CProxyShims_SSL_CTX_set1_groups_list(context, groups) != 1
        {
            throw TLSError.drainingQueue("setting the key-exchange groups \(groups)")
        }
        if profile.hello == .postQuantum, !offersPostQuantum {
            try Self.addHelloPadding(to: context)
            helloPadding = Self.helloPaddingLength
        }
        guard SSL_CTX_set_ciphersuites(context, profile.openSSLTLS13Suites) == 1 else {
            throw TLSError.drainingQueue("setting the TLS 1.3 suites")
        }
        // Trust is judged after the handshake, by ChainValidation over the certificates the server sent:
        // the one path building every verdict shares, offline ones included. The handshake itself builds
        // no path (the callback accepts the chain unexamined), so none is built twice.
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        SSL_CTX_set_cert_verify_callback(context, { _, _ in 1 }, nil)
        // OpenSSL refuses a Certificate message over 100 KiB; servers with long chains or many names
        // send more, and an iPhone accepts them. 256 KiB still bounds what one handshake costs.
        _ = CProxyShims_SSL_CTX_set_max_cert_list(context, 256 * 1024)
        // The upstream leg of an intercepted tunnel is mostly idle: its record buffers are freed
        // between records, as the device leg's are (TLSServerContext).
        _ = CProxyShims_SSL_CTX_release_buffers(context)
        ERR_clear_error()
    }

    deinit { SSL_CTX_free(raw) }

    /// The extension type that pads an iOS 26 hello where OpenSSL has no ML-KEM: 0x3A3A, one of the
    /// GREASE values (RFC 8701), which no extension will ever be assigned and which servers must
    /// ignore (RFC 8446 4.1.2), as they ignore the GREASE extensions Chrome sends. Not padding (21,
    /// RFC 7685): OpenSSL 3.0 implements that one itself, so SSL_CTX_add_custom_ext refuses the type,
    /// and its own SSL_OP_TLSEXT_PADDING only pads a hello of 256-511 bytes up to 512 (the F5 bug
    /// workaround), never past a segment.
    static let helloPaddingType: UInt32 = 0x3A3A

    /// The padding's body: zeros, as RFC 7685 pads. The X25519MLKEM768 key share OpenSSL 3.0 cannot
    /// send is 1,220 bytes (its entry: group, length, a 1,184-byte ML-KEM-768 key and a 32-byte
    /// X25519 one); 1,350 brings OpenSSL's hello of about 250 bytes to iOS 26's 1.6 KB (1,612 bytes
    /// on the wire for `localhost`), and even with no server name the record spans two 1,460-byte
    /// segments.
    static let helloPaddingLength = 1_350

    /// Adds the padding to every ClientHello the context's connections send (the first and one after
    /// a HelloRetryRequest), and to no other message.
    private static func addHelloPadding(to context: OpaquePointer) throws(TLSError) {
        guard
            SSL_CTX_add_custom_ext(
                context, helloPaddingType, UInt32(SSL_EXT_CLIENT_HELLO), helloPaddingAdd, helloPaddingFree, nil, nil,
                nil) == 1
        else { throw TLSError.drainingQueue("adding the ClientHello padding (extension \(helloPaddingType))") }
    }

    /// Narrows the context's TLS 1.2-and-below list to what it holds minus `excluded`, by IANA id:
    /// OpenSSL's cipher strings can only exclude by name, and not every suite has a name we know.
    private static func exclude(_ excluded: Set<CipherSuite>, from context: OpaquePointer) throws(TLSError) {
        guard let stack = SSL_CTX_get_ciphers(context) else { throw TLSError.drainingQueue("SSL_CTX_get_ciphers") }
        let names: [String] = (0..<OPENSSL_sk_num(stack)).compactMap { index in
            guard let cipher = OPENSSL_sk_value(stack, index).map(OpaquePointer.init) else { return nil }
            let suite = CipherSuite(id: UInt16(truncatingIfNeeded: SSL_CIPHER_get_protocol_id(cipher)))
            // TLS 1.3 suites are set apart, with SSL_CTX_set_ciphersuites.
            guard suite.keyExchange != .tls13, suite.id & 0xFF00 != 0x1300, !excluded.contains(suite),
                let name = SSL_CIPHER_get_name(cipher)
            else { return nil }
            return String(cString: name)
        }
        guard !names.isEmpty else {
            throw TLSError(operation: "choosing suites", openSSLErrors: ["every TLS 1.2 suite is excluded"])
        }
        guard SSL_CTX_set_cipher_list(context, (names + ["@SECLEVEL=0"]).joined(separator: ":")) == 1 else {
            throw TLSError.drainingQueue("setting the remaining TLS 1.2 suites")
        }
    }
}

/// OpenSSL asks for the padding's body while it writes a ClientHello. It needs no owner: the body is
/// the same zeros for every hello, allocated here and freed in ``helloPaddingFree``, which OpenSSL
/// calls once the hello is written (the one owner of the buffer in between is OpenSSL).
private func helloPaddingAdd(
    ssl: OpaquePointer?, type: UInt32, context: UInt32, out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
    length: UnsafeMutablePointer<Int>?, certificate: OpaquePointer?, chainIndex: Int,
    alert: UnsafeMutablePointer<Int32>?, argument: UnsafeMutableRawPointer?
) -> Int32 {
    guard let out, let length,
        let body = CRYPTO_zalloc(TLSClientContext.helloPaddingLength, #fileID, #line)
    else {
        alert?.pointee = Int32(SSL_AD_INTERNAL_ERROR)
        return -1
    }
    out.pointee = UnsafePointer(body.assumingMemoryBound(to: UInt8.self))
    length.pointee = TLSClientContext.helloPaddingLength
    return 1
}

/// Frees what ``helloPaddingAdd`` allocated (OPENSSL_free is a macro over CRYPTO_free).
private func helloPaddingFree(
    ssl: OpaquePointer?, type: UInt32, context: UInt32, body: UnsafePointer<UInt8>?,
    argument: UnsafeMutableRawPointer?
) {
    CRYPTO_free(UnsafeMutableRawPointer(mutating: body), #fileID, #line)
}
