import ATSPolicy
internal import COpenSSL
import ProxyWire

/// Completing a path whose server left an intermediate out, as iOS does: from the `http` CA Issuers
/// URL of the certificate left without an issuer, one fetch after another (an intermediate may lack
/// its own issuer too), at most ``maximumFetches``. The steps only: who fetches, and how (on an event
/// loop, ProxyCore's `PathCompletion`), is the caller's.
package struct IntermediateCompletion {
    /// More than any real chain needs, and a bound on what one certificate can make the proxy fetch.
    package static let maximumFetches = 3

    private let presented: [X509Certificate]
    private let anchors: TrustAnchors
    private let time: Int64
    private var intermediates: [X509Certificate] = []
    private var tried: Set<String> = []
    package private(set) var validation: ChainValidation

    package init(presented: [X509Certificate], anchors: TrustAnchors, at time: Int64) {
        self.presented = presented
        self.anchors = anchors
        self.time = time
        validation = ChainValidation(presented: presented, anchors: anchors, at: time)
    }

    /// The URL to fetch next, or nil when fetching can complete the path no further: it is trusted,
    /// it failed for another reason, the certificate names no `http` URL, or enough was fetched.
    package mutating func nextURL() -> CAIssuersURL? {
        guard case .untrusted = validation.trust, let missing = validation.missingIssuer,
            validation.fetches.count < Self.maximumFetches
        else { return nil }
        for text in missing.fetchableURLs where !tried.contains(text) {
            tried.insert(text)
            if let url = CAIssuersURL(text) { return url }
        }
        return nil
    }

    /// What fetching `url` gave; the path is built again with what it brought.
    package mutating func received(_ url: CAIssuersURL, _ result: Result<[X509Certificate], FetchFailure>, cached: Bool)
    {
        let fetch: IntermediateFetch
        switch result {
        case .success(let certificates):
            intermediates += certificates
            fetch = IntermediateFetch(
                url: url.text, outcome: .fetched(subjects: certificates.map(\.subject)), cached: cached)
        case .failure(let failure):
            fetch = IntermediateFetch(url: url.text, outcome: .failed(reason: failure.reason), cached: cached)
        }
        validation = ChainValidation(
            presented: presented, intermediates: intermediates, fetches: validation.fetches + [fetch], anchors: anchors,
            at: time)
    }

    /// Why a fetch brought no certificate.
    package struct FetchFailure: Error, Sendable, Hashable {
        package var reason: String
        package init(_ reason: String) { self.reason = reason }
    }
}

extension X509Certificate {
    /// The certificates of a CA Issuers answer: one DER certificate (what RFC 5280 asks for), a
    /// PKCS #7 certs-only bundle (`.p7c`, the other form it allows), or PEM (which some servers send).
    package static func certificates(caIssuersBody body: [UInt8]) -> Result<
        [X509Certificate], IntermediateCompletion.FetchFailure
    > {
        guard !body.isEmpty else { return .failure(.init("the answer is empty")) }
        if let single = try? certificates(encoded: body) { return .success(single) }
        let bundle: [X509Certificate]? = body.withUnsafeBufferPointer { buffer -> [X509Certificate]? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let pkcs7 = d2i_PKCS7(nil, &cursor, buffer.count) else { return nil }
            defer { PKCS7_free(pkcs7) }
            guard OBJ_obj2nid(pkcs7.pointee.type) == NID_pkcs7_signed, let signed = pkcs7.pointee.d.sign,
                let stack = signed.pointee.cert
            else { return nil }
            return (0..<OPENSSL_sk_num(stack)).compactMap { index in
                OPENSSL_sk_value(stack, index).map { X509Certificate(retaining: OpaquePointer($0)) }
            }
        }
        ERR_clear_error()
        guard let bundle, !bundle.isEmpty else {
            return .failure(.init("the answer (\(body.count) bytes) is no certificate: not DER, PKCS #7 or PEM"))
        }
        return .success(bundle)
    }
}
