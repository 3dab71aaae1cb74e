/// A missing intermediate fetched as iOS fetches it: from the leaf's (or an intermediate's) `http` CA
/// Issuers URL, when the server left it out. On the connection's log line and in `diagnose`.
public struct IntermediateFetch: Sendable, Hashable {
    public enum Outcome: Sendable, Hashable {
        /// The URL answered with these certificates (their subjects).
        case fetched(subjects: [String])
        /// It did not, and why: unreachable, refused by the destination rules, not a certificate.
        case failed(reason: String)
    }

    /// The CA Issuers URL, as the certificate wrote it.
    public var url: String
    public var outcome: Outcome
    /// Whether the answer came from the cache of earlier fetches.
    public var cached: Bool

    public init(url: String, outcome: Outcome, cached: Bool = false) {
        self.url = url
        self.outcome = outcome
        self.cached = cached
    }

    /// Whether the fetch brought no certificate.
    public var failed: Bool {
        if case .failed = outcome { true } else { false }
    }

    /// `fetched` or `failed`: the log's spelling.
    public var result: String {
        if case .fetched = outcome { "fetched" } else { "failed" }
    }
}
