import TLSTestSupport
import Testing

@testable import ProxyCore

/// The cache against a model made of plain arrays, over long random runs of lookups, stores,
/// abandoned probes, flushes and reloads: the linked lists over indices must keep the same order
/// and the same counters as the obvious O(n) version.
@Suite("Verdict cache against a model")
struct VerdictCacheModelTests {
    /// The cache's contract, written the slow, obvious way.
    struct Model {
        var capacity: Int
        var timeToLive: Int64 = 1000
        var expires: [String: Int64] = [:]
        /// Most recently used first.
        var recency: [String] = []
        /// Oldest store first.
        var completion: [String] = []
        var inFlight: [String] = []
        var statistics = VerdictCache<String, Int>.Statistics()

        var count: Int { recency.count + inFlight.count }

        mutating func drop(_ key: String) {
            expires[key] = nil
            recency.removeAll { $0 == key }
            completion.removeAll { $0 == key }
        }

        mutating func sweep(now: Int64) {
            for _ in 0..<VerdictCache<String, Int>.sweepBudget {
                guard let oldest = completion.first, expires[oldest]! <= now else { return }
                drop(oldest)
                statistics.expiredRemovals += 1
            }
        }

        mutating func evict(toHold limit: Int) {
            while count > limit, let last = recency.last {
                drop(last)
                statistics.evictions += 1
            }
        }

        /// "hit", "waiting" or "probe".
        mutating func lookup(_ key: String, now: Int64) -> String {
            sweep(now: now)
            if let expiry = expires[key] {
                if expiry > now {
                    recency.removeAll { $0 == key }
                    recency.insert(key, at: 0)
                    statistics.hits += 1
                    return "hit"
                }
                drop(key)
                statistics.expiredRemovals += 1
            } else if inFlight.contains(key) {
                statistics.joinedInFlight += 1
                return "waiting"
            }
            evict(toHold: capacity - 1)
            inFlight.append(key)
            statistics.misses += 1
            return "probe"
        }

        mutating func complete(_ key: String, now: Int64) {
            sweep(now: now)
            inFlight.removeAll { $0 == key }
            guard timeToLive > 0 else { return }
            drop(key)
            expires[key] = now + timeToLive
            recency.insert(key, at: 0)
            completion.append(key)
            evict(toHold: capacity)
        }
    }

    @Test("random runs agree with the model", arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func randomRuns(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var model = Model(capacity: Int.random(in: 1...6, using: &random))
        let cache = VerdictCache<String, Int>(timeToLiveMilliseconds: model.timeToLive, capacity: model.capacity)
        var now: Int64 = 0
        for step in 0..<4000 {
            now += Int64.random(in: 0..<200, using: &random)
            let key = "k\(Int.random(in: 0..<12, using: &random))"
            var operation = ""
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<55:
                let expected = model.lookup(key, now: now)
                let actual: String
                switch cache.lookup(key, now: now, waiter: { _ in }) {
                case .hit: actual = "hit"
                case .waiting: actual = "waiting"
                case .probe: actual = "probe"
                }
                operation = "lookup \(key) → \(expected)"
                #expect(actual == expected, "seed \(seed) step \(step): \(operation)")
            case 55..<85 where !model.inFlight.isEmpty:
                let pending = model.inFlight[Int.random(in: 0..<model.inFlight.count, using: &random)]
                model.complete(pending, now: now)
                cache.complete(pending, with: 1, now: now)
                operation = "complete \(pending)"
            case 85..<90 where !model.inFlight.isEmpty:
                let pending = model.inFlight.removeFirst()
                cache.abandon(pending, answering: 0)
                operation = "abandon \(pending)"
            case 90..<94:
                model.capacity = Int.random(in: 1...6, using: &random)
                model.evict(toHold: model.capacity)
                cache.capacity = model.capacity
                operation = "capacity \(model.capacity)"
            case 94..<97:
                model.timeToLive = [0, 300, 1000, 3000][Int.random(in: 0..<4, using: &random)]
                cache.timeToLive = model.timeToLive
                operation = "ttl \(model.timeToLive)"
            case 97..<100:
                for stale in model.recency where stale.hasSuffix("1") { model.drop(stale) }
                cache.removeAll(where: { $0.hasSuffix("1") })
                operation = "flush *1"
            default:
                continue
            }
            var expected = model.statistics
            (expected.entries, expected.inFlight, expected.capacity) = (
                model.count, model.inFlight.count, model.capacity
            )
            guard cache.keysByRecency == model.recency, cache.statistics == expected else {
                let found = "\(cache.keysByRecency) \(cache.statistics)"
                Issue.record(
                    "seed \(seed) step \(step) after \(operation): \(found), model \(model.recency) \(expected)")
                return
            }
        }
    }
}
