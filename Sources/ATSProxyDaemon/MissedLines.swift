/// The lines the live view's feed dropped, told at most once a second: the feed is taken up to
/// several times a second under load, and a notice per take would flood the journal.
struct MissedLines {
    /// The least time between two tellings.
    static let interval: Int64 = 1_000
    private var pending = 0
    private var lastTold: Int64?

    /// Adds `dropped` lines at `now` (monotonic milliseconds) and returns how many to tell now: all
    /// not yet told, once `interval` has passed since the last telling (the first at once); else 0.
    mutating func add(_ dropped: Int, now: Int64) -> Int {
        pending += dropped
        guard pending > 0 else { return 0 }
        if let lastTold, now - lastTold < Self.interval { return 0 }
        lastTold = now
        defer { pending = 0 }
        return pending
    }
}
