import Synchronization

/// How many leaves one ``LeafMinter`` made and how often the loops' ``LeafCache``s answered from
/// what they held: shared by every loop (one minter serves them all), lock-free, for the metrics.
package final class LeafStatistics: Sendable {
    private let minted = Atomic<Int>(0)
    private let cacheHits = Atomic<Int>(0)

    package init() {}

    /// Leaves signed since the minter was made (first uses, names met again after eviction, renewals).
    package var mintedCount: Int { minted.load(ordering: .relaxed) }
    /// Device handshakes given a leaf a loop's cache already held.
    package var cacheHitCount: Int { cacheHits.load(ordering: .relaxed) }

    func leafMinted() { minted.add(1, ordering: .relaxed) }

    func cacheHit() { cacheHits.add(1, ordering: .relaxed) }
}
