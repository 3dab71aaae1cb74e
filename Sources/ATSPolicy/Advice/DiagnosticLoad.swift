/// What loading the URL showed in one diagnostic test, once its first handshake passed: each hop
/// of the redirects URLSession follows, and how the load ended. nscurl's PASS means the load
/// completed, whatever the page's status.
public struct DiagnosticLoad: Sendable {
    public struct Hop: Sendable {
        /// The hop's URL, as a redirect named it (resolved).
        public var url: String
        /// The host the hop went to, as a host (for the exception it would need).
        public var host: HostIdentity
        public var status: Int?
        /// The redirect's target as the server wrote it.
        public var location: String?
        /// What ATS said of this hop; nil when it never got to a verdict.
        public var verdict: Verdict?
        /// Why the hop got no response, when it did not.
        public var failure: String?

        public init(
            url: String, host: HostIdentity, status: Int?, location: String?, verdict: Verdict?, failure: String?
        ) {
            self.url = url
            self.host = host
            self.status = status
            self.location = location
            self.verdict = verdict
            self.failure = failure
        }
    }

    public var hops: [Hop]
    /// The last hop's status when the load completed; nil when it did not.
    public var finalStatus: Int?

    public init(hops: [Hop], finalStatus: Int?) {
        self.hops = hops
        self.finalStatus = finalStatus
    }

    /// The hop ATS refused, when the load ended that way after a redirect.
    public var refusedRedirect: Hop? {
        guard hops.count > 1, let last = hops.last, let verdict = last.verdict, !verdict.isCompliant else { return nil }
        return last
    }

    /// Why the load did not complete, in words, or nil when it did.
    public var failure: String? {
        guard finalStatus == nil, let last = hops.last else { return nil }
        if let refused = refusedRedirect {
            let why = refused.verdict?.violations.map(\.explanation).joined(separator: "; ") ?? ""
            return "the load was redirected to \(refused.url), which ATS refuses: \(why)"
        }
        return "loading \(last.url) failed: \(last.failure ?? "no response")"
    }
}
