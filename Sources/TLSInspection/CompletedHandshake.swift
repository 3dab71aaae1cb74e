import ATSPolicy
internal import COpenSSL
internal import CProxyShims

/// Reads the facts of a client handshake from its `SSL`: ``TLSStream``'s, which it borrows for the
/// call.
struct CompletedHandshake {
    let ssl: OpaquePointer
    let anchors: TrustAnchors

    /// The facts of a completed handshake, judged at `now`.
    func outcome(now: Int64) -> ProbeOutcome {
        let peer = peerCertificates()
        let validation = ChainValidation(presented: peer, anchors: anchors, at: now)
        let cipher = SSL_get_current_cipher(ssl).map { CipherSuite(id: SSL_CIPHER_get_protocol_id($0)) }
        let version = TLSVersion(wireValue: UInt16(truncatingIfNeeded: SSL_version(ssl)))
        var observed = validation.observedConnection(
            tlsVersion: version, cipherSuite: cipher, keyExchangeGroup: keyExchangeGroup(),
            extendedMasterSecret: version == .tls13 ? true : CProxyShims_SSL_get_extms_support(ssl) == 1,
            serverSignatureScheme: peerSignatureDigest().map { "digest \($0)" }, deliveredSCTs: deliveredSCTCount(),
            evaluationTime: now, handshakeSCTs: anchors.ctLogList == nil ? nil : SSL_get0_peer_scts(ssl))
        observed.applicationProtocol = TLSStream.selectedApplicationProtocol(of: ssl)
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

    /// The group the key exchange used. OpenSSL names it by NID; the log and the policy name it by
    /// its IANA codepoint, which OpenSSL hands back as such (under TLSEXT_nid_unknown) only for
    /// groups it has no NID for, as the ML-KEM hybrids of OpenSSL 3.5.
    private func keyExchangeGroup() -> KeyExchangeGroup? {
        let nid = CProxyShims_SSL_get_negotiated_group(ssl)
        if nid & Int32(TLSEXT_nid_unknown) != 0 { return KeyExchangeGroup(codepoint: UInt16(truncatingIfNeeded: nid)) }
        return Self.codepoints[nid].map(KeyExchangeGroup.init(codepoint:))
    }

    /// NIDs to IANA codepoints for the groups OpenSSL 3 knows (its own table, ssl/t1_lib.c `supported_groups_default`
    /// and `nid_to_group`, kept there and not exported).
    private static let codepoints: [Int32: UInt16] = [
        NID_secp224r1: 0x0015, NID_secp256k1: 0x0016, NID_X9_62_prime256v1: 0x0017, NID_secp384r1: 0x0018,
        NID_secp521r1: 0x0019, NID_brainpoolP256r1: 0x001A, NID_brainpoolP384r1: 0x001B, NID_brainpoolP512r1: 0x001C,
        NID_X25519: 0x001D, NID_X448: 0x001E, NID_ffdhe2048: 0x0100, NID_ffdhe3072: 0x0101, NID_ffdhe4096: 0x0102,
        NID_ffdhe6144: 0x0103, NID_ffdhe8192: 0x0104,
    ]

    private func peerSignatureDigest() -> String? {
        var nid: Int32 = NID_undef
        guard CProxyShims_SSL_get_peer_signature_nid(ssl, &nid) == 1, nid != NID_undef, let name = OBJ_nid2sn(nid)
        else {
            return nil
        }
        return String(cString: name)
    }
}
