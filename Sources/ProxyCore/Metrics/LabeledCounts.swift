import POSIX

/// Counts by a label whose values are not known in advance (violation names, a request's action and
/// status class), from any thread: a dictionary under a `Locked`, held for one increment. Where the
/// values are few and fixed, plain atomics serve (``ProxyStatistics``); these are touched once per
/// logged line at most, beside the log writer's own lock, so the extra lock costs nothing felt.
package final class LabeledCounts<Key: Hashable & Sendable>: Sendable {
    private let counts = Locked<[Key: Int]>([:])

    package init() {}

    package func add(_ key: Key, _ amount: Int = 1) {
        counts.withLock { $0[key, default: 0] += amount }
    }

    /// Counts each of `keys` once, under one lock.
    package func add(_ keys: some Sequence<Key>) {
        counts.withLock { counts in
            for key in keys { counts[key, default: 0] += 1 }
        }
    }

    /// Every key counted so far, with its count.
    package var snapshot: [Key: Int] { counts.withLock { $0 } }
}
