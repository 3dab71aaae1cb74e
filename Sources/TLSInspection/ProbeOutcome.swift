import ATSPolicy
internal import COpenSSL
internal import CProxyShims

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
