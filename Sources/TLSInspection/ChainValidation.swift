import ATSPolicy
internal import COpenSSL

/// A path from a server's certificates to a trust anchor, built the one way every verdict builds it:
/// after a probe's handshake, in intercept mode's upstream handshake, and for `diagnose --chain`,
/// which has no server at all.
///
/// OpenSSL builds the path (`X509_verify_cert`, partial chains allowed so that an intermediate or the
/// leaf itself may be the anchor); what it checks is what Apple's code checks of a path's signatures and
/// CA constraints. Dates, purposes, key sizes and hashes are left to the policy module, which judges them
/// from the certificate facts by the anchor's kind, so OpenSSL's own rules for them are off.
package struct ChainValidation {
    /// The path, leaf first, the anchor last when it is trusted; otherwise as far as it could be built.
    package let path: [X509Certificate]
    package let trust: ChainTrust
    /// The certificate whose issuer was found neither among the certificates given nor among the
    /// anchors, when that is why the path is untrusted: the intermediate a server left out.
    package let missingIssuer: MissingIssuer?

    /// The fetches of missing intermediates that went into this path (``IntermediateCompletion``).
    package let fetches: [IntermediateFetch]
    /// The log list SCTs are verified against, from the anchors.
    private let ctLogList: CTLogList?

    /// Builds the path for `presented` (leaf first, as the server sent them, or as a file gave them),
    /// with `intermediates` (fetched ones, as `fetches` records) as further candidates, against `anchors`.
    ///
    /// `time` steers which issuer OpenSSL prefers when several match (one valid then over an expired
    /// copy, as Apple's path builder does); the dates themselves are judged by the policy module.
    package init(
        presented: [X509Certificate], intermediates: [X509Certificate] = [], fetches: [IntermediateFetch] = [],
        anchors: TrustAnchors, at time: Int64
    ) {
        self.fetches = fetches
        ctLogList = anchors.ctLogList
        guard let leaf = presented.first else {
            path = []
            trust = .untrusted(reason: "the server sent no certificate")
            missingIssuer = nil
            return
        }
        let record = PathBuildingRecord()
        var built: [X509Certificate] = []
        if let context = X509_STORE_CTX_new() {
            defer { X509_STORE_CTX_free(context) }
            let untrusted = OPENSSL_sk_new_null()
            defer { OPENSSL_sk_free(untrusted) }
            for certificate in presented.dropFirst() + intermediates {
                OPENSSL_sk_push(untrusted, UnsafeRawPointer(certificate.raw))
            }
            if X509_STORE_CTX_init(context, anchors.store.raw, leaf.raw, untrusted) == 1 {
                let parameters = X509_STORE_CTX_get0_param(context)
                X509_VERIFY_PARAM_set_flags(parameters, UInt(X509_V_FLAG_PARTIAL_CHAIN))
                X509_VERIFY_PARAM_set_time(parameters, time_t(time))
                // Without the record the callback could not tell a failure from success: refuse outright.
                guard pathBuildingRecordIndex >= 0,
                    X509_STORE_CTX_set_ex_data(
                        context, pathBuildingRecordIndex, Unmanaged.passUnretained(record).toOpaque()) == 1
                else {
                    path = presented
                    trust = .untrusted(reason: "the path could not be built: no verification record")
                    missingIssuer = nil
                    return
                }
                X509_STORE_CTX_set_verify_cb(context, pathBuildingRecorder)
                if X509_verify_cert(context) != 1, record.failure == nil {
                    record.failure =
                        "the path could not be built: "
                        + (TLSError.drainErrorQueue().first ?? "X509_verify_cert failed")
                }
                if let chain = X509_STORE_CTX_get0_chain(context) {
                    built = (0..<OPENSSL_sk_num(chain)).compactMap { index in
                        OPENSSL_sk_value(chain, index).map { X509Certificate(retaining: OpaquePointer($0)) }
                    }
                    // Trusted only if the path ends at a certificate of the store, never at one that was
                    // given: the untrusted ones are counted from the leaf.
                    if record.failure == nil, Int(X509_STORE_CTX_get_num_untrusted(context)) >= built.count {
                        record.failure = "the path ends at a certificate that is not a trust anchor"
                    }
                }
            } else {
                record.failure = "the path could not be built: " + (TLSError.drainErrorQueue().first ?? "")
            }
        } else {
            record.failure = "the path could not be built: X509_STORE_CTX_new failed"
        }
        ERR_clear_error()
        if let failure = record.failure {
            path = built.isEmpty ? presented : built
            missingIssuer = record.missingIssuer
            let fetchFailures = fetches.compactMap { fetch -> String? in
                guard case .failed(let reason) = fetch.outcome else { return nil }
                return "fetching \(fetch.url) failed: \(reason)"
            }
            let missing = missingIssuer.map { ": \($0.words)" } ?? ""
            trust = .untrusted(reason: ([failure + missing] + fetchFailures).joined(separator: "; "))
        } else {
            path = built
            missingIssuer = nil
            trust = built.last.map { .anchored(anchors.kind(of: $0)) } ?? .untrusted(reason: "no path was built")
        }
    }
}

extension ChainValidation {
    /// What a verdict is made from: the path's facts and trust, with what the handshake showed (none
    /// for a chain judged offline). The one place a probe's facts and `diagnose --chain`'s are put
    /// together, so that both verdicts come from the same facts.
    package func observedConnection(
        tlsVersion: TLSVersion? = nil, cipherSuite: CipherSuite? = nil, keyExchangeGroup: KeyExchangeGroup? = nil,
        extendedMasterSecret: Bool? = nil, serverSignatureScheme: String? = nil, deliveredSCTs: Int = 0,
        evaluationTime: Int64, handshakeSCTs: OpaquePointer? = nil
    ) -> ObservedConnection {
        var observed = ObservedConnection(
            tlsVersion: tlsVersion, cipherSuite: cipherSuite, keyExchangeGroup: keyExchangeGroup,
            extendedMasterSecret: extendedMasterSecret,
            serverSignatureScheme: serverSignatureScheme, chain: path.map(\.facts), trust: trust,
            embeddedSCTs: path.first?.embeddedSCTCount ?? 0, deliveredSCTs: deliveredSCTs,
            evaluationTime: evaluationTime, intermediateFetches: fetches)
        if let ctLogList, let leaf = path.first {
            observed.sctVerification = SCTVerification(
                logList: ctLogList.name,
                scts: verifiedSCTs(ctLogList, leaf: leaf, handshakeSCTs: handshakeSCTs, time: evaluationTime))
        }
        return observed
    }

    /// The SCTs the handshake gave (`handshakeSCTs`: every source, a STACK_OF(SCT) the `SSL` owns), or
    /// without a handshake the leaf's embedded ones, as the log list judges them.
    private func verifiedSCTs(_ list: CTLogList, leaf: X509Certificate, handshakeSCTs: OpaquePointer?, time: Int64)
        -> [VerifiedSCT]
    {
        let issuer = path.count > 1 ? path[1] : nil
        if let handshakeSCTs { return list.verify(handshakeSCTs, leaf: leaf, issuer: issuer, time: time) }
        guard let embedded = X509_get_ext_d2i(leaf.raw, NID_ct_precert_scts, nil, nil) else { return [] }
        let stack = OpaquePointer(embedded)
        defer { SCT_LIST_free(stack) }
        // Parsed from the certificate they have no source yet: embedded, which makes them precert entries.
        for index in 0..<OPENSSL_sk_num(stack) {
            if let sct = OPENSSL_sk_value(stack, index) {
                _ = SCT_set_source(OpaquePointer(sct), SCT_SOURCE_X509V3_EXTENSION)
            }
        }
        return list.verify(stack, leaf: leaf, issuer: issuer, time: time)
    }

    /// `observed` with this path in place of its own: the handshake's facts kept, the chain, trust,
    /// embedded SCTs and fetches from here (a path completed by fetching after the handshake).
    package func replacingPath(in observed: ObservedConnection) -> ObservedConnection {
        var replaced = observedConnection(
            tlsVersion: observed.tlsVersion, cipherSuite: observed.cipherSuite,
            keyExchangeGroup: observed.keyExchangeGroup, extendedMasterSecret: observed.extendedMasterSecret,
            serverSignatureScheme: observed.serverSignatureScheme, deliveredSCTs: observed.deliveredSCTs,
            evaluationTime: observed.evaluationTime)
        // The handshake's SCTs (delivered ones included) were verified with the handshake; keep that.
        if observed.sctVerification != nil { replaced.sctVerification = observed.sctVerification }
        return replaced
    }
}

/// A certificate whose issuer is missing, and where Apple's client would fetch that issuer from.
package struct MissingIssuer: Sendable, Hashable {
    /// The subject of the certificate left without an issuer, and the issuer it names.
    package let subject: String
    package let issuer: String
    /// The certificate's Authority Information Access `caIssuers` URIs, as written.
    package let caIssuersURLs: [String]

    /// The `http` URLs among them: the only ones iOS fetches an intermediate from.
    package var fetchableURLs: [String] { caIssuersURLs.filter { $0.lowercased().hasPrefix("http://") } }

    var words: String {
        let source =
            caIssuersURLs.isEmpty
            ? "the certificate names no CA Issuers URL to fetch it from"
            : "its CA Issuers URL is " + caIssuersURLs.joined(separator: ", ")
        return "the server did not send the issuer \"\(issuer)\" of \"\(subject)\"; \(source)"
    }
}

/// What the verify callback saw while a path was built: the first error that means "no trust".
private final class PathBuildingRecord {
    var failure: String?
    var missingIssuer: MissingIssuer?

    func record(error: Int32, depth: Int32, certificate: X509Certificate?) {
        guard failure == nil, !PathBuildingRecord.judgedByPolicy.contains(error) else { return }
        let reason = String(cString: X509_verify_cert_error_string(Int(error)))
        failure = depth == 0 ? reason : "\(reason) (certificate \(depth) of the chain)"
        if [X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT].contains(error),
            let certificate
        {
            missingIssuer = MissingIssuer(
                subject: certificate.subject, issuer: certificate.issuer, caIssuersURLs: certificate.caIssuersURLs)
        }
    }

    /// Errors the policy module judges itself, by the anchor's kind, from the certificate facts.
    private static let judgedByPolicy: Set<Int32> = [
        X509_V_ERR_CERT_NOT_YET_VALID, X509_V_ERR_CERT_HAS_EXPIRED, X509_V_ERR_INVALID_PURPOSE,
        X509_V_ERR_EE_KEY_TOO_SMALL, X509_V_ERR_CA_KEY_TOO_SMALL, X509_V_ERR_CA_MD_TOO_WEAK,
        X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH,
    ]
}

/// The ex_data slot of an `X509_STORE_CTX` that holds its ``PathBuildingRecord``.
private let pathBuildingRecordIndex: Int32 = CRYPTO_get_ex_new_index(
    CRYPTO_EX_INDEX_X509_STORE_CTX, 0, nil, nil, nil, nil)

/// Records each error and lets path building go on (returns 1), so the path is built as far as it goes
/// and the first error says why it is not trusted.
private func pathBuildingRecorder(_ preverified: Int32, _ context: OpaquePointer?) -> Int32 {
    guard preverified == 0 else { return 1 }
    // No record to say why: stop, rather than let a failure pass as success.
    guard let context, let record = X509_STORE_CTX_get_ex_data(context, pathBuildingRecordIndex) else { return 0 }
    let certificate = X509_STORE_CTX_get_current_cert(context).map { X509Certificate(retaining: $0) }
    Unmanaged<PathBuildingRecord>.fromOpaque(record).takeUnretainedValue()
        .record(
            error: X509_STORE_CTX_get_error(context), depth: X509_STORE_CTX_get_error_depth(context),
            certificate: certificate)
    return 1
}
