import EventLoop

/// Keeps a slow reader from making memory grow (le-proxy's rule): once more than ``highWater``
/// bytes wait to be written to the target, the source stops reading until the target has drained
/// to half of that.
enum Backpressure {
    static let highWater = 512 * 1024
    /// Where a paused source reads again: the target's output drained to half the high water.
    static let resumeMark = highWater / 2

    /// Call after moving bytes from `source` into `target`. Once drained, `source` reads again if
    /// `mayResume` still says so (a source that has ended stays off). Takes `target`'s drained
    /// callback until then: for a target whose callbacks the caller owns.
    static func apply(source: any ByteStream, target: any ByteStream, mayResume: @escaping () -> Bool) {
        guard pausesReading(of: source, for: target) else { return }
        target.setDrainedMark(resumeMark)
        target.onDrained = { target in
            target.onDrained = nil
            target.setDrainedMark(0)
            if mayResume() { source.setReading(true) }
        }
    }

    /// The rule without the wait, for a target whose callbacks another owns (the client, whose are
    /// its session's): stops `source` when `target` holds too much, and returns whether it did. The
    /// caller then waits for `target` to drain to ``resumeMark``, and resumes `source` itself.
    static func pausesReading(of source: any ByteStream, for target: any ByteStream) -> Bool {
        guard target.pendingOutputBytes > highWater else { return false }
        source.setReading(false)
        return true
    }
}
