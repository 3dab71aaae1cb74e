import Testing

@testable import ATSProxyDaemon

/// When the daemon returns a burst's memory: only once a burst of at least 256 connections has
/// gone and at most half the peak is left, and once per burst.
@Suite struct BurstWatchTests {
    @Test(
        "trims after a burst has ended, not during it, not for a small one, once per burst",
        arguments: [
            // (open connections at each tick, the ticks at which a trim is asked for)
            ([0, 100, 300, 0], [3]),
            ([0, 1000, 600, 400, 0], [3, 4]),  // 400 ≤ 500 with 600 gone, then those 400 too
            ([0, 200, 0, 200, 0], []),  // never 256 at once
            ([2000, 2000, 1900, 1800], []),  // a steady load, nothing given back
            ([0, 300, 0, 0, 0], [2]),  // once, not again while idle
            ([0, 300, 0, 300, 0], [2, 4]),  // each burst
            ([0, 600, 300, 290, 0], [2, 4]),  // half left: trimmed; 10 more is too few, 300 is not
        ] as [([Int], [Int])])
    func trims(counts: [Int], expected: [Int]) {
        var watch = BurstWatch()
        let trimmed = counts.indices.filter { watch.observe(open: counts[$0]) }
        #expect(trimmed == expected)
    }
}

extension BurstWatchTests {
    @Test("a burst that came and went between two looks is seen through the peak since the last look")
    func burstBetweenLooks() {
        var watch = BurstWatch()
        let looks = [(0, 0), (0, 3000), (0, 0), (100, 200)].map { watch.observe(open: $0.0, peakSinceLast: $0.1) }
        #expect(looks == [false, true, false, false])
    }
}
