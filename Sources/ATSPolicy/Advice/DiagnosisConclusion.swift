/// How one diagnostic test came out.
public struct DiagnosticResult: Sendable {
    public var test: DiagnosticTest
    /// The verdict, when the load got as far as one.
    public var verdict: Verdict?
    /// Why the load failed with no violation to name it by: a handshake no fact explains, a server
    /// that does not speak TLS.
    public var failure: String?
    /// The load of the URL, made once the first handshake passed (nil when it did not, or when the
    /// test did not load).
    public var load: DiagnosticLoad?
    /// The key-exchange group the test's ATS-shaped handshake used; nil when it did not complete.
    public var keyExchangeGroup: KeyExchangeGroup?

    public init(
        test: DiagnosticTest, verdict: Verdict?, failure: String? = nil, load: DiagnosticLoad? = nil,
        keyExchangeGroup: KeyExchangeGroup? = nil
    ) {
        self.test = test
        self.verdict = verdict
        self.failure = failure
        self.load = load
        self.keyExchangeGroup = keyExchangeGroup
    }

    /// The first handshake passed and, when the URL was loaded, the load completed.
    public var passed: Bool { failure == nil && verdict?.isCompliant == true && load?.failure == nil }

    /// What went wrong, in words: each violation's explanation, the failure, or why the load did not
    /// complete.
    public var reasons: [String] {
        (verdict?.violations.map(\.explanation) ?? []) + (failure.map { [$0] } ?? [])
            + (load?.failure.map { [$0] } ?? [])
    }

    /// The Apple error the app would see: the first handshake's, else the refused redirect's.
    public var error: AppleError? { verdict?.error ?? load?.refusedRedirect?.verdict?.error }
}

/// What `diagnose` concludes from its tests: the smallest `NSExceptionDomains` entry that passes, or
/// why no ATS setting helps.
public struct DiagnosisConclusion: Sendable {
    public enum Kind: String, Sendable {
        /// The ATS defaults pass: no exception.
        case defaultsPass = "defaults_pass"
        /// An exception entry for the host passes.
        case exceptionNeeded = "exception_needed"
        /// The URL's host passes (with the defaults, or with `minimalException`), but its page
        /// redirects to another host that ATS refuses under these tests: that host needs an entry of
        /// its own (`redirect_url` says where to run diagnose next).
        case redirectNeedsException = "redirect_needs_exception"
        /// Only `NSAllowsArbitraryLoads` passes: the server fails an ATS minimum no exception key relaxes.
        case arbitraryLoadsOnly = "arbitrary_loads_only"
        /// Even allowing all loads fails: the server fails default trust, or what every Apple client needs.
        case noSettingHelps = "no_setting_helps"
    }

    public var kind: Kind
    /// The entry for the host's `NSExceptionDomains` key (`minimal_exception`), when one is needed and passes.
    public var minimalException: SuggestedException?
    /// The name of the test that passed with that entry.
    public var passingTest: String?
    /// Whether even allowing all loads fails (`trust_failure`).
    public var trustFailure: Bool
    /// For ``Kind/redirectNeedsException``: the redirect's URL, on the host that needs its own entry.
    public var redirectURL: String?
    /// Entries that other hosts need for the load to pass its redirects: a redirect in cleartext to
    /// another host needs that host's `NSExceptionAllowsInsecureHTTPLoads`, which no entry for the
    /// URL's host gives.
    public var redirectExceptions: [(domain: String, exception: SuggestedException)] = []
    /// Whether the whole load, redirects included, passed under every proposed entry (checked by
    /// loading it again); nil when no such load was made.
    public var wholeLoadPasses: Bool?
    /// The headline's start for a cleartext redirect, before what the other hosts need.
    private var redirectHeadline: String?
    /// One sentence.
    public var headline: String
    /// Why: what the defaults fail (for an exception), or what no setting relaxes.
    public var reasons: [String]

    /// Violations that default trust evaluation raises with ATS on or off; the rest (version, suites)
    /// are what the client can negotiate.
    static let protocolKinds: Set<ViolationKind> = [
        .tlsVersion, .cipherNotATS, .cipherNotForwardSecret, .cleartext, .handshakeFailure,
    ]

    public init(host: String, results: [DiagnosticResult]) {
        let defaults = results.first { if case .defaults = $0.test.role { true } else { false } }
        let allowAll = results.first { if case .allowAllLoads = $0.test.role { true } else { false } }
        trustFailure = allowAll.map { !$0.passed } ?? false
        minimalException = nil
        passingTest = nil
        if defaults?.passed == true {
            kind = .defaultsPass
            headline = "\(host) passes with the ATS defaults: no exception is needed."
            reasons = []
            return
        }
        // The exception tests, each with what its entry relaxes.
        let exceptionTests = results.compactMap { result in result.test.exception.map { (result, $0) } }
        if let (smallest, exception) = exceptionTests.filter({ $0.0.passed }).min(by: {
            $0.1.looseness < $1.1.looseness
        }) {
            kind = .exceptionNeeded
            minimalException = exception
            passingTest = smallest.test.name
            headline = "\(host) needs an NSExceptionDomains entry: \(exception.summary)."
            reasons = defaults?.reasons ?? []
        } else if let (result, hop) = Self.redirectElsewhere(results, host: host) {
            kind = .redirectNeedsException
            minimalException = result.test.exception
            passingTest = minimalException == nil ? nil : result.test.name
            redirectURL = hop.url
            let own =
                minimalException.map { "needs an NSExceptionDomains entry (\($0.summary))" }
                ?? "passes with the ATS defaults"
            if hop.verdict?.violations.map(\.kind) == [.cleartext] {
                // Cleartext is the one refusal whose entry is known without a handshake: allow it.
                redirectExceptions = [(hop.host.description, SuggestedException(allowsInsecureHTTPLoads: true))]
                let start = "\(host) \(own), but its page redirects to \(hop.url) in cleartext: "
                redirectHeadline = start
                headline = start + "\(hop.host.description) needs NSExceptionAllowsInsecureHTTPLoads too."
            } else {
                headline =
                    "\(host) \(own), but its page redirects to \(hop.url), which ATS refuses: \(hop.host.description) needs "
                    + "an exception of its own. Run atsproxyctl diagnose \(hop.url) for it."
            }
            reasons = hop.verdict?.violations.map(\.explanation) ?? []
        } else if let allowAll, allowAll.passed {
            kind = .arbitraryLoadsOnly
            headline =
                "Only NSAllowsArbitraryLoads passes: no NSExceptionDomains key relaxes what \(host) fails. "
                + "Fix the server."
            // What is left when every exception key is relaxed at once.
            let loosest = exceptionTests.max { $0.1.looseness < $1.1.looseness }?.0
            reasons = loosest?.reasons ?? defaults?.reasons ?? []
        } else {
            kind = .noSettingHelps
            let kinds = Set(allowAll?.verdict?.violations.map(\.kind) ?? [])
            let trust = allowAll?.failure == nil && !kinds.isEmpty && kinds.isDisjoint(with: Self.protocolKinds)
            if kinds.contains(.tlsVersion) {
                // With ATS off only the OS's own floor judges the version (iOS 26 refuses TLS 1.0 and 1.1
                // for every load): no key reaches it, so say what the server must do instead.
                headline =
                    "\(host) offers no TLS version the OS accepts for any load: no ATS setting helps: "
                    + "the server must offer TLS 1.2."
            } else {
                headline =
                    trust
                    ? "The server fails default trust: no ATS setting helps."
                    : "The server fails what every Apple client requires: no ATS setting helps."
            }
            reasons = allowAll?.reasons ?? defaults?.reasons ?? []
        }
    }

    /// Every entry proposed: the URL's host's, then the redirects' hosts'.
    public func entries(host: String) -> [(domain: String, exception: SuggestedException)] {
        (minimalException.map { [(host, $0)] } ?? []) + redirectExceptions
    }

    /// The load was made again under every proposed entry (``entries(host:)``, with `redirectExceptions`
    /// as they stand now: a further cleartext redirect adds its host): says whether it passed.
    public mutating func wholeLoadChecked(
        passed: Bool, redirectExceptions: [(domain: String, exception: SuggestedException)], failure: String?
    ) {
        self.redirectExceptions = redirectExceptions
        wholeLoadPasses = passed
        let hosts = redirectExceptions.map(\.domain).joined(separator: ", ")
        let needs =
            "\(hosts) \(redirectExceptions.count == 1 ? "needs" : "need") NSExceptionAllowsInsecureHTTPLoads too"
        headline =
            (redirectHeadline ?? "")
            + (passed
                ? needs + ": with the entries below the whole load passes, redirects included (loaded again to check)."
                : needs + ", but even with the entries below the load does not pass: \(failure ?? "it failed").")
    }

    /// The smallest test whose own handshake passed but whose load ATS refused at a redirect to
    /// another host, with that hop: what the URL's host needs is then known, and the rest is the other
    /// host's, which no entry for the URL's host reaches.
    private static func redirectElsewhere(_ results: [DiagnosticResult], host: String) -> (
        DiagnosticResult, DiagnosticLoad.Hop
    )? {
        let refused = results.compactMap { result -> (DiagnosticResult, DiagnosticLoad.Hop, Int)? in
            guard result.failure == nil, result.verdict?.isCompliant == true, let hop = result.load?.refusedRedirect,
                hop.host.description != host
            else { return nil }
            switch result.test.role {
            case .defaults: return (result, hop, 0)
            case .exception(let entry): return (result, hop, entry.looseness)
            case .allowAllLoads: return nil
            }
        }
        return refused.min { $0.2 < $1.2 }.map { ($0.0, $0.1) }
    }
}
