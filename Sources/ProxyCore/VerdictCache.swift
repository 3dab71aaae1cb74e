import POSIX
import Synchronization

/// Probe results shared by every event loop, kept for a time to live and up to a capacity, with
/// concurrent first requests for one key sharing one probe: the first caller probes, the others
/// wait for its answer.
///
/// **Bounds.** At most ``capacity`` entries are held, probes in flight included: when a new entry
/// would exceed it, the least recently used finished entries are evicted (a hit makes an entry the
/// most recent). Entries in flight count toward the capacity but are never evicted, since their
/// waiters are owed an answer; only when more probes than the capacity are under way at once does
/// the cache hold more than it, and it is brought back under at the next store.
///
/// **Expiry.** An expired entry is never returned, and is removed rather than left to be replaced:
/// a lookup that meets one removes it, and every lookup and store also sweeps up to
/// ``sweepBudget`` expired entries from the oldest end of the completion-order list. Since at most
/// one entry is stored per operation and up to four are swept, expired entries cannot pile up while
/// there is traffic, and no request pays for a scan of the whole cache. Expiry is completion time
/// plus the time to live then in force, so after a reload shortens it the list is not in expiry
/// order for a while: the sweep stops at the first live entry, and the rest go at a lookup, by
/// eviction, or once that entry expires.
///
/// Every operation is O(1) (amortised, through the dictionary); the entries live in the slots of
/// one array on doubly linked lists by index (``VerdictCacheStorage``).
///
/// Thread-safe: all state is behind one `Locked`, and waiters are called outside it.
package final class VerdictCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    package typealias Waiter = @Sendable (Value) -> Void

    /// What a lookup tells the caller to do.
    package enum Lookup: Sendable {
        /// A fresh value: use it.
        case hit(Value)
        /// Nobody has it: probe, then call ``complete(_:with:now:)`` (or ``abandon(_:answering:)``).
        case probe
        /// Someone is probing it: the waiter will be called with the answer.
        case waiting
    }

    /// The cache's counters since it was made (a flush or a reload does not reset them).
    package struct Statistics: Sendable, Equatable {
        /// Entries held, probes in flight included.
        package var entries = 0
        /// Probes under way: entries whose waiters wait for an answer.
        package var inFlight = 0
        package var capacity = 0
        /// Lookups answered with a fresh value.
        package var hits = 0
        /// Lookups that found nothing fresh and started a probe.
        package var misses = 0
        /// Lookups that joined a probe already in flight.
        package var joinedInFlight = 0
        /// Finished entries dropped, least recently used first, to make room.
        package var evictions = 0
        /// Expired entries removed, by a lookup or by the sweep.
        package var expiredRemovals = 0

        package init() {}
    }

    /// The most expired entries one lookup or store removes from the oldest end.
    package static var sweepBudget: Int { 4 }

    /// The default ``capacity``: `--verdict-cache-size`'s default.
    package static var defaultCapacity: Int { 10_000 }

    private struct State: ~Copyable {
        var storage = VerdictCacheStorage<Key, Value>()
        var capacity: Int
        var counters = Statistics()
        /// Probes in flight that a removal matched: their answers go to their waiters but are not
        /// stored (they were started under what the removal found stale, say a reload's old hosts).
        var staleInFlight: Set<Key> = []
    }

    private let state: Locked<State>
    private let timeToLiveMilliseconds: Atomic<Int64>

    /// - Parameter capacity: the most entries held (at least 1).
    package init(timeToLiveMilliseconds: Int64, capacity: Int = VerdictCache.defaultCapacity) {
        self.timeToLiveMilliseconds = Atomic(timeToLiveMilliseconds)
        state = Locked(State(capacity: max(1, capacity)))
    }

    /// How long a value stays fresh, in milliseconds; a reload may change it (for values stored after).
    package var timeToLive: Int64 {
        get { timeToLiveMilliseconds.load(ordering: .relaxed) }
        set { timeToLiveMilliseconds.store(newValue, ordering: .relaxed) }
    }

    /// The most entries held (at least 1). A reload may change it: a smaller one evicts the least
    /// recently used finished entries down to it at once.
    package var capacity: Int {
        get { state.withLock { $0.capacity } }
        set {
            state.withLock { state in
                let capacity = max(1, newValue)
                state.capacity = capacity
                Self.evict(&state, toHold: capacity)
                if state.storage.isSparse { state.storage.compact() }
            }
        }
    }

    /// Looks `key` up at `now` (milliseconds). On `.waiting`, `waiter` will be called exactly once.
    package func lookup(_ key: Key, now: Int64, waiter: @escaping Waiter) -> Lookup {
        state.withLock { state in
            Self.sweep(&state, now: now)
            if let slot = state.storage.find(key) {
                switch state.storage.slots[slot].content {
                case .ready(let value, let expires)? where expires > now:
                    state.storage.touch(slot)
                    state.counters.hits += 1
                    return .hit(value)
                case .inFlight?:
                    state.storage.addWaiter(waiter, at: slot)
                    state.counters.joinedInFlight += 1
                    return .waiting
                default:
                    state.storage.remove(slot)
                    state.counters.expiredRemovals += 1
                }
            }
            // The probe's entry counts toward the capacity: room is made now, not at the store.
            let room = state.capacity - 1
            Self.evict(&state, toHold: room)
            state.storage.insertInFlight(key)
            state.counters.misses += 1
            return .probe
        }
    }

    /// Stores the probe's answer as the most recently used entry and hands it to everyone who waited
    /// for it. With a time to live of 0 nothing is stored: the value would be expired already.
    package func complete(_ key: Key, with value: Value, now: Int64) {
        let ttl = timeToLive
        let waiters: [Waiter] = state.withLock { state in
            Self.sweep(&state, now: now)
            guard ttl > 0, state.staleInFlight.remove(key) == nil else {
                guard let slot = state.storage.find(key), case .inFlight(let list)? = state.storage.remove(slot) else {
                    return []
                }
                return list
            }
            let waiting = state.storage.store(key, value, expires: now + ttl)
            let capacity = state.capacity
            Self.evict(&state, toHold: capacity)
            return waiting
        }
        for waiter in waiters { waiter(value) }
    }

    /// Gives up on a probe without caching (its waiters get `value`, typically a failure, uncached).
    package func abandon(_ key: Key, answering value: Value) {
        let waiters: [Waiter] = state.withLock { state in
            state.staleInFlight.remove(key)
            guard let slot = state.storage.find(key), case .inFlight = state.storage.slots[slot].content else {
                return []
            }
            guard case .inFlight(let list)? = state.storage.remove(slot) else { return [] }
            return list
        }
        for waiter in waiters { waiter(value) }
    }

    /// Drops every finished entry (probes in flight finish and are stored as usual).
    package func removeAll() {
        removeAll(where: { _ in true })
    }

    /// Drops finished entries whose key matches (a reload whose requirements changed). With
    /// `includingInFlight`, matching probes in flight are marked too: their answers go to their
    /// waiters but are not stored (they were started under what the caller found stale, such as a
    /// reload's old hosts file). O(n).
    package func removeAll(includingInFlight: Bool = false, where predicate: (Key) -> Bool) {
        state.withLock { state in
            if includingInFlight {
                for (key, slot) in state.storage.index where predicate(key) {
                    if case .inFlight = state.storage.slots[slot].content { state.staleInFlight.insert(key) }
                }
            }
            var slot = state.storage.leastRecent
            while slot != VerdictCacheStorage<Key, Value>.none {
                let next = state.storage.slots[slot].moreRecent
                if let key = state.storage.slots[slot].key, predicate(key) { state.storage.remove(slot) }
                slot = next
            }
            if state.storage.isSparse { state.storage.compact() }
        }
    }

    /// Entries held, fresh or not, probes in flight included (for `status`).
    package var count: Int { state.withLock { $0.storage.count } }

    /// The counters, with the entries and probes in flight now.
    package var statistics: Statistics {
        state.withLock { state in
            var statistics = state.counters
            statistics.entries = state.storage.count
            statistics.inFlight = state.storage.inFlightCount
            statistics.capacity = state.capacity
            return statistics
        }
    }

    /// The finished entries' keys, most recently used first; for tests. O(n).
    var keysByRecency: [Key] {
        state.withLock { state in
            var keys: [Key] = []
            var slot = state.storage.mostRecent
            while slot != VerdictCacheStorage<Key, Value>.none {
                if let key = state.storage.slots[slot].key { keys.append(key) }
                slot = state.storage.slots[slot].lessRecent
            }
            return keys
        }
    }

    // MARK: - Under the lock

    /// Evicts least recently used finished entries until at most `limit` are held, or only probes
    /// in flight are left.
    private static func evict(_ state: inout State, toHold limit: Int) {
        while state.storage.count > limit, state.storage.leastRecent != VerdictCacheStorage<Key, Value>.none {
            state.storage.remove(state.storage.leastRecent)
            state.counters.evictions += 1
        }
    }

    /// Removes up to ``sweepBudget`` expired entries from the oldest end of the completion order.
    private static func sweep(_ state: inout State, now: Int64) {
        for _ in 0..<sweepBudget {
            let oldest = state.storage.oldest
            guard oldest != VerdictCacheStorage<Key, Value>.none,
                case .ready(_, let expires)? = state.storage.slots[oldest].content, expires <= now
            else { return }
            state.storage.remove(oldest)
            state.counters.expiredRemovals += 1
        }
    }
}
