import POSIX
import Testing

@testable import ProxyCore

/// The cache's bounds: least-recently-used eviction, expiry removal, probes in flight, a capacity
/// changed at reload, and the counters `stats` shows.
@Suite("Verdict cache bounds")
struct VerdictCacheBoundsTests {
    typealias Cache = VerdictCache<String, Int>

    /// Looks each key up at `now`, completing it when the lookup asks for a probe: a request for
    /// each, as the proxy makes them.
    static func request(_ cache: Cache, _ keys: [String], now: Int64 = 0) {
        for key in keys {
            if case .probe = cache.lookup(key, now: now, waiter: { _ in }) {
                cache.complete(key, with: key.count, now: now)
            }
        }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var requests: String
        var recency: [String]
        var hits: Int
        var misses: Int
        var evictions: Int
        var testDescription: String { requests }
    }

    @Test(
        "at capacity 3 the least recently used goes first, and a hit makes an entry the most recent",
        arguments: [
            Case(requests: "a b c", recency: ["c", "b", "a"], hits: 0, misses: 3, evictions: 0),
            Case(requests: "a b c d", recency: ["d", "c", "b"], hits: 0, misses: 4, evictions: 1),
            Case(requests: "a b c a d", recency: ["d", "a", "c"], hits: 1, misses: 4, evictions: 1),
            Case(requests: "a b c a b d e", recency: ["e", "d", "b"], hits: 2, misses: 5, evictions: 2),
            Case(requests: "a b c c c c d", recency: ["d", "c", "b"], hits: 3, misses: 4, evictions: 1),
            Case(requests: "a b c d a", recency: ["a", "d", "c"], hits: 0, misses: 5, evictions: 2),
            Case(requests: "a a a a a", recency: ["a"], hits: 4, misses: 1, evictions: 0),
        ])
    func leastRecentlyUsed(_ test: Case) {
        let cache = Cache(timeToLiveMilliseconds: 60_000, capacity: 3)
        Self.request(cache, test.requests.split(separator: " ").map(String.init))
        #expect(cache.keysByRecency == test.recency)
        let statistics = cache.statistics
        #expect(statistics.entries == test.recency.count)
        #expect(statistics.hits == test.hits)
        #expect(statistics.misses == test.misses)
        #expect(statistics.evictions == test.evictions)
        #expect(statistics.expiredRemovals == 0)
    }

    @Test("a lookup that meets an expired entry removes it and probes again, wherever the entry is")
    func expiredAtLookup() {
        let cache = Cache(timeToLiveMilliseconds: 10_000, capacity: 10)
        Self.request(cache, ["long"], now: 0)
        // A reload shortened the time to live: "short" expires first, but is not at the oldest end,
        // where the sweep stops at "long".
        cache.timeToLive = 1000
        Self.request(cache, ["short"], now: 0)
        guard case .probe = cache.lookup("short", now: 1000, waiter: { _ in }) else {
            Issue.record("an expired entry must not be returned")
            return
        }
        let statistics = cache.statistics
        #expect(statistics.expiredRemovals == 1)
        #expect(statistics.entries == 2)
        #expect(statistics.inFlight == 1)
        #expect(cache.keysByRecency == ["long"])
    }

    @Test("the sweep removes at most four expired entries a lookup, so many expired entries go over a few requests")
    func sweep() {
        let cache = Cache(timeToLiveMilliseconds: 1000, capacity: 1000)
        let keys = (0..<50).map { "host\($0)" }
        Self.request(cache, keys, now: 0)
        #expect(cache.count == 50)
        _ = cache.lookup("z", now: 5000, waiter: { _ in })
        #expect(cache.statistics.expiredRemovals == VerdictCache<String, Int>.sweepBudget)
        #expect(cache.count == 50 - 4 + 1)
        for _ in 0..<12 { _ = cache.lookup("z", now: 5000, waiter: { _ in }) }
        let statistics = cache.statistics
        #expect(statistics.expiredRemovals == 50)
        #expect(statistics.entries == 1, "only z's probe is left")
        #expect(statistics.joinedInFlight == 12)
        // The oldest first, and a live entry stops the sweep.
        cache.complete("z", with: 1, now: 5000)
        Self.request(cache, ["late"], now: 5500)
        _ = cache.lookup("other", now: 6000, waiter: { _ in })
        #expect(cache.keysByRecency == ["late"])
        #expect(cache.statistics.expiredRemovals == 51)
    }

    @Test("probes in flight are never evicted, and their waiters get the answer")
    func inFlightSurvivesPressure() {
        let cache = Cache(timeToLiveMilliseconds: 60_000, capacity: 2)
        let received = Locked<[Int]>([])
        guard case .probe = cache.lookup("slow", now: 0, waiter: { _ in }) else {
            Issue.record("first lookup must probe")
            return
        }
        guard case .waiting = cache.lookup("slow", now: 0, waiter: { value in received.withLock { $0.append(value) } })
        else {
            Issue.record("second lookup must wait")
            return
        }
        Self.request(cache, (0..<20).map { "k\($0)" })
        var statistics = cache.statistics
        #expect(statistics.inFlight == 1)
        #expect(statistics.entries == 2, "the probe in flight counts toward the capacity")
        #expect(statistics.evictions == 19)
        #expect(cache.keysByRecency == ["k19"])
        cache.complete("slow", with: 99, now: 0)
        #expect(received.withLock { $0 } == [99])
        #expect(cache.keysByRecency == ["slow", "k19"])

        // More probes than the capacity: all are kept, then the stores bring the cache back under it.
        for key in ["p", "q", "r"] { _ = cache.lookup(key, now: 0, waiter: { _ in }) }
        statistics = cache.statistics
        #expect(statistics.inFlight == 3)
        #expect(statistics.entries == 3)
        #expect(cache.keysByRecency.isEmpty)
        for key in ["p", "q", "r"] { cache.complete(key, with: 1, now: 0) }
        #expect(cache.keysByRecency == ["r", "q"])
        #expect(cache.statistics.inFlight == 0)
    }

    /// Five finished entries and a probe in flight, at capacity 6, then `after`.
    @Test(
        "a smaller capacity at reload evicts down to it at once; probes in flight stay",
        arguments: [
            (3, ["e", "d"], 3),
            (6, ["e", "d", "c", "b", "a"], 0),
            (9, ["e", "d", "c", "b", "a"], 0),
            (1, [], 5),
            (0, [], 5),  // below 1 is taken as 1
        ])
    func shrink(_ after: Int, _ kept: [String], _ evicted: Int) {
        let cache = Cache(timeToLiveMilliseconds: 60_000, capacity: 6)
        Self.request(cache, ["a", "b", "c", "d", "e"])
        _ = cache.lookup("pending", now: 0, waiter: { _ in })
        let evictedBefore = cache.statistics.evictions
        cache.capacity = after
        #expect(cache.keysByRecency == kept)
        #expect(cache.statistics.evictions - evictedBefore == evicted)
        #expect(cache.statistics.inFlight == 1)
        guard case .waiting = cache.lookup("pending", now: 0, waiter: { _ in }) else {
            Issue.record("the probe in flight must survive the shrink")
            return
        }
    }

    @Test("a shrink from thousands keeps order and working links (the slots are compacted)")
    func compaction() {
        let cache = Cache(timeToLiveMilliseconds: 60_000, capacity: 2000)
        Self.request(cache, (0..<2000).map { "k\($0)" })
        cache.capacity = 10
        #expect(cache.keysByRecency == (1990..<2000).reversed().map { "k\($0)" })
        Self.request(cache, ["k1995", "new"])
        #expect(cache.keysByRecency.prefix(2) == ["new", "k1995"])
        #expect(cache.count == 10)
        cache.removeAll()
        #expect(cache.count == 0)
        Self.request(cache, ["x", "y"])
        #expect(cache.keysByRecency == ["y", "x"])
    }

    @Test("flushes are not evictions; joins, hits and misses are counted apart")
    func counters() {
        let cache = Cache(timeToLiveMilliseconds: 60_000, capacity: 10)
        Self.request(cache, ["a", "b", "a"])
        _ = cache.lookup("c", now: 0, waiter: { _ in })
        _ = cache.lookup("c", now: 0, waiter: { _ in })
        cache.abandon("c", answering: 0)
        cache.removeAll(where: { $0 == "a" })
        var expected = VerdictCache<String, Int>.Statistics()
        (expected.entries, expected.capacity, expected.hits, expected.misses, expected.joinedInFlight) = (
            1, 10, 1, 3, 1
        )
        #expect(cache.statistics == expected)
    }

    @Test("a time to live of 0 caches nothing but still answers the waiters")
    func zeroTimeToLive() {
        let cache = Cache(timeToLiveMilliseconds: 0, capacity: 10)
        let received = Locked<[Int]>([])
        _ = cache.lookup("a", now: 0, waiter: { _ in })
        _ = cache.lookup("a", now: 0, waiter: { value in received.withLock { $0.append(value) } })
        cache.complete("a", with: 5, now: 0)
        #expect(received.withLock { $0 } == [5])
        #expect(cache.count == 0)
    }
}

@Suite("Verdict cache: probes in flight across a removal")
struct VerdictCacheStaleInFlightTests {
    /// What a lookup said, comparable.
    static func said(_ lookup: VerdictCache<String, Int>.Lookup) -> String {
        switch lookup {
        case .hit(let value): "hit \(value)"
        case .probe: "probe"
        case .waiting: "waiting"
        }
    }

    @Test("a probe in flight that a removal including probes matched answers its waiters and is not stored; others are")
    func staleProbeNotStored() {
        let cache = VerdictCache<String, Int>(timeToLiveMilliseconds: 1000)
        #expect(Self.said(cache.lookup("old", now: 0, waiter: { _ in })) == "probe")
        #expect(Self.said(cache.lookup("kept", now: 0, waiter: { _ in })) == "probe")
        let answered = Locked<[Int]>([])
        let joined = cache.lookup("old", now: 0, waiter: { value in answered.withLock { $0.append(value) } })
        #expect(Self.said(joined) == "waiting")
        cache.removeAll(includingInFlight: true) { $0 == "old" }
        cache.complete("old", with: 1, now: 1)
        cache.complete("kept", with: 2, now: 1)
        #expect(answered.withLock { $0 } == [1], "the waiter still gets the answer")
        #expect(Self.said(cache.lookup("old", now: 2, waiter: { _ in })) == "probe", "not stored: probed again")
        #expect(Self.said(cache.lookup("kept", now: 2, waiter: { _ in })) == "hit 2")
    }

    @Test("a plain removal keeps probes in flight: their answers are stored as usual")
    func plainRemovalStores() {
        let cache = VerdictCache<String, Int>(timeToLiveMilliseconds: 1000)
        #expect(Self.said(cache.lookup("a", now: 0, waiter: { _ in })) == "probe")
        cache.removeAll { $0 == "a" }
        cache.complete("a", with: 7, now: 1)
        #expect(Self.said(cache.lookup("a", now: 2, waiter: { _ in })) == "hit 7")
    }
}
