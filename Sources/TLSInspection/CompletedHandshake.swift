import ATSPolicy
internal import COpenSSL
internal import CProxyShims

/// Reads the facts of a client handshake from its `SSL`: shared by the blocking probe and
/// ``TLSStream``, whose SSL it borrows for the call.
struct CompletedHandshake {
    let ssl: OpaquePointer
    let anchors: TrustAnchors

    /// The facts of a completed handshake, judged at `now`.
    func outcome(now: Int64) -> ProbeOutcome {
        let peer = peerCertificates()
        let validation = ChainValidation(presented: peer, anchors: anchors)
        let cipher = SSL_get_current_cipher(ssl).map { CipherSuite(id: SSL_CIPHER_get_protocol_id($0)) }
        let version = TLSVersion(wireValue: UInt16(truncatingIfNeeded: SSL_version(ssl)))
        let observed = validation.observedConnection(
            tlsVersion: version, cipherSuite: cipher,
            extendedMasterSecret: version == .tls13 ? true : CProxyShims_SSL_get_extms_support(ssl) == 1,
            serverSignatureScheme: peerSignatureDigest().map { "digest \($0)" }, deliveredSCTs: deliveredSCTCount(),
            evaluationTime: now)
        return ProbeOutcome(observed: observed, failure: nil, peerCertificates: peer, path: validation.path)
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

    /// The certificates the server sent.
    func peerCertificates() -> [X509Certificate] {
        guard let stack = SSL_get_peer_cert_chain(ssl) else { return [] }
        return (0..<OPENSSL_sk_num(stack)).compactMap { index in
            OPENSSL_sk_value(stack, index).map { X509Certificate(retaining: OpaquePointer($0)) }
        }
    }

    private func peerSignatureDigest() -> String? {
        var nid: Int32 = NID_undef
        guard CProxyShims_SSL_get_peer_signature_nid(ssl, &nid) == 1, nid != NID_undef, let name = OBJ_nid2sn(nid)
        else {
            return nil
        }
        return String(cString: name)
    }
}
