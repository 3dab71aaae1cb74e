extension HostTraffic {
    /// Adds what `other` saw of the same host, as if its lines had been tallied here after this
    /// value's: the live view merges the tallies it keeps per app and device into one for a filter.
    ///
    /// Counts add up (the per-reason, per-version and per-suite ones key by key), sets and the
    /// cleartext flag join, ``firstSeen`` takes the earlier and ``lastSeen`` the later time. What
    /// only the first line says (``firstFailure``, ``firstUnreadableHello``, a violation's
    /// explanation) stays this value's when it has one, else becomes `other`'s: the order absorbed
    /// decides, as the order of lines does within one tally.
    /// - Precondition: `other` is about the same host.
    package mutating func absorb(_ other: HostTraffic) {
        precondition(other.host == host, "absorbing \(other.host) into \(host)")
        connections += other.connections
        requests += other.requests
        allowed += other.allowed
        blocked += other.blocked
        failed += other.failed
        asServerName += other.asServerName
        ports.formUnion(other.ports)
        cleartextSeen = cleartextSeen || other.cleartextSeen
        passedThroughAfterRefusal += other.passedThroughAfterRefusal
        passedThrough.merge(other.passedThrough, uniquingKeysWith: +)
        firstFailure = firstFailure ?? other.firstFailure
        tlsStreams += other.tlsStreams
        versions.merge(other.versions, uniquingKeysWith: +)
        suites.merge(other.suites, uniquingKeysWith: +)
        violations.merge(other.violations) { mine, _ in mine }
        unreadableHellos += other.unreadableHellos
        firstUnreadableHello = firstUnreadableHello ?? other.firstUnreadableHello
        firstSeen = Self.earlier(firstSeen, other.firstSeen)
        lastSeen = Self.later(lastSeen, other.lastSeen)
    }

    /// RFC 3339 UTC timestamps of the same precision order as text.
    private static func earlier(_ a: String?, _ b: String?) -> String? {
        guard let a, let b else { return a ?? b }
        return min(a, b)
    }

    private static func later(_ a: String?, _ b: String?) -> String? {
        guard let a, let b else { return a ?? b }
        return max(a, b)
    }
}
