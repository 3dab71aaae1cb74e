import POSIX

/// A histogram at one moment: how many observations fell in each bucket (not cumulative; the
/// writer adds them up), their count and their sum.
package struct HistogramSnapshot: Sendable, Equatable {
    /// Each bucket's upper bound, inclusive, ascending (`+Inf` is implied, not listed).
    package let upperBounds: [Double]
    /// Observations per bucket, one per bound: those above the previous bound and at most this one.
    package var bucketCounts: [Int]
    /// Observations above the last bound (the `+Inf` bucket's own share).
    package var overflow = 0
    package var sum = 0.0

    /// Every observation, the `+Inf` bucket's cumulative count.
    package var count: Int { bucketCounts.reduce(overflow, +) }

    /// - Precondition: `upperBounds` is strictly ascending and finite.
    package init(upperBounds: [Double]) {
        precondition(
            zip(upperBounds, upperBounds.dropFirst()).allSatisfy { $0 < $1 } && upperBounds.allSatisfy(\.isFinite),
            "a histogram's bounds ascend strictly and are finite")
        self.upperBounds = upperBounds
        bucketCounts = Array(repeating: 0, count: upperBounds.count)
    }

    /// Counts `value` in the first bucket whose bound is at least `value`.
    package mutating func observe(_ value: Double) {
        sum += value
        // A dozen bounds: a linear scan is as fast as a search.
        if let index = upperBounds.firstIndex(where: { value <= $0 }) {
            bucketCounts[index] += 1
        } else {
            overflow += 1
        }
    }
}

/// Durations in seconds, observed from any thread. Under a `Locked` rather than one atomic per
/// bucket so that a scrape reads the buckets, the count and the sum of the same moment (a
/// histogram whose `_count` disagrees with its `+Inf` bucket is malformed). One observation per
/// probe, not per connection, so the lock is never contended in practice.
package final class DurationHistogram: Sendable {
    private let state: Locked<HistogramSnapshot>

    /// Probe latencies: 5 ms (a handshake on the same host) to 10 s (the default handshake
    /// timeout), roughly ×2 apart.
    package static let probeBounds: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    package init(upperBounds: [Double]) { state = Locked(HistogramSnapshot(upperBounds: upperBounds)) }

    package func observe(_ duration: Duration) {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        state.withLock { $0.observe(seconds) }
    }

    package var snapshot: HistogramSnapshot { state.withLock { $0 } }
}
