/// Decides when a burst of connections has ended, so that the memory it used can be handed back
/// to the system (``MemoryTrimmer``): fed at a steady interval the connections open now and the
/// most that were open since the last time (a burst shorter than the interval still counts), it
/// answers true once the count has fallen from a peak by at least ``minimumDrop`` and to at most
/// half of it, then starts watching for the next peak.
///
/// Why a drop and not a level: the memory glibc keeps after a burst is the burst's, whatever the
/// level before it; a daemon that sits at 2,000 tunnels all day has nothing to give back until
/// they go. Why a minimum: trimming walks every arena's free chunks under its lock, which costs
/// more than the few KiB a handful of closed connections leave.
struct BurstWatch: Equatable {
    /// Connections that must have closed since the peak (at about 32 KiB each, measured in
    /// bench/proxy-bench, 256 are some 8 MiB).
    var minimumDrop: Int
    /// The most connections open since the last trim (or the start).
    private(set) var peak = 0

    init(minimumDrop: Int = 256) { self.minimumDrop = minimumDrop }

    /// Notes `open` connections now and at most `peakSinceLast` since the last call; true when a
    /// burst has just ended and memory should be trimmed.
    mutating func observe(open: Int, peakSinceLast: Int = 0) -> Bool {
        peak = max(peak, open, peakSinceLast)
        guard peak - open >= minimumDrop, open <= peak / 2 else { return false }
        peak = open
        return true
    }
}
