import Synchronization

/// Probe results shared by every event loop, kept for a time to live, with concurrent first requests
/// for one key sharing one probe: the first caller probes, the others wait for its answer.
///
/// Thread-safe: all state is behind one `Mutex`, and waiters are called outside it.
public final class VerdictCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    public typealias Waiter = @Sendable (Value) -> Void

    /// What a lookup tells the caller to do.
    public enum Lookup: Sendable {
        /// A fresh value: use it.
        case hit(Value)
        /// Nobody has it: probe, then call ``complete(_:with:now:)`` (or ``abandon(_:)``).
        case probe
        /// Someone is probing it: the waiter will be called with the answer.
        case waiting
    }

    private enum Entry {
        case ready(Value, expires: Int64)
        case inFlight([Waiter])
    }

    private struct State: ~Copyable {
        var entries: [Key: Entry] = [:]
    }

    private let state = Mutex(State())
    private let timeToLiveMilliseconds: Atomic<Int64>

    public init(timeToLiveMilliseconds: Int64) { self.timeToLiveMilliseconds = Atomic(timeToLiveMilliseconds) }

    /// How long a value stays fresh, in milliseconds; a reload may change it (for values stored after).
    public var timeToLive: Int64 {
        get { timeToLiveMilliseconds.load(ordering: .relaxed) }
        set { timeToLiveMilliseconds.store(newValue, ordering: .relaxed) }
    }

    /// Looks `key` up at `now` (milliseconds). On `.waiting`, `waiter` will be called exactly once.
    public func lookup(_ key: Key, now: Int64, waiter: @escaping Waiter) -> Lookup {
        state.withLock { state in
            switch state.entries[key] {
            case .ready(let value, let expires)? where expires > now:
                return .hit(value)
            case .inFlight(var waiters)?:
                waiters.append(waiter)
                state.entries[key] = .inFlight(waiters)
                return .waiting
            default:
                state.entries[key] = .inFlight([])
                return .probe
            }
        }
    }

    /// Stores the probe's answer and hands it to everyone who waited for it.
    public func complete(_ key: Key, with value: Value, now: Int64) {
        let waiters: [Waiter] = state.withLock { state in
            let waiting: [Waiter]
            if case .inFlight(let list)? = state.entries[key] { waiting = list } else { waiting = [] }
            state.entries[key] = .ready(value, expires: now + timeToLive)
            return waiting
        }
        for waiter in waiters { waiter(value) }
    }

    /// Gives up on a probe without caching (its waiters get `value`, typically a failure, uncached).
    public func abandon(_ key: Key, answering value: Value) {
        let waiters: [Waiter] = state.withLock { state in
            guard case .inFlight(let list)? = state.entries.removeValue(forKey: key) else { return [] }
            return list
        }
        for waiter in waiters { waiter(value) }
    }

    /// Drops every finished entry (probes in flight finish and are stored as usual).
    public func removeAll() {
        state.withLock { state in
            state.entries = state.entries.filter { if case .inFlight = $0.value { true } else { false } }
        }
    }

    /// Drops finished entries whose key matches (a reload whose requirements changed).
    public func removeAll(where predicate: (Key) -> Bool) {
        state.withLock { state in
            state.entries = state.entries.filter { key, entry in
                if case .inFlight = entry { return true }
                return !predicate(key)
            }
        }
    }

    /// Entries held, fresh or not (for `status`).
    public var count: Int { state.withLock { $0.entries.count } }
}
