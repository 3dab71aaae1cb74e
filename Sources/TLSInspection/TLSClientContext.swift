import ATSPolicy
internal import COpenSSL
internal import CProxyShims

/// An `SSL_CTX` configured as one client profile with one set of anchors: the single owner of the
/// context, freed in `deinit`. Contexts are reference-counted by OpenSSL and safe to share between
/// threads once configured, which is why this may be cached and reused.
package final class TLSClientContext: @unchecked Sendable {
    let raw: OpaquePointer
    let anchors: TrustAnchors

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
        if let groups = profile.openSSLGroups, CProxyShims_SSL_CTX_set1_groups_list(context, groups) != 1 {
            throw TLSError.drainingQueue("setting the key-exchange groups \(groups)")
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
