import EventLoop

/// Keeps a slow reader from making memory grow (le-proxy's rule): once more than ``highWater``
/// bytes wait to be written to the target, the source stops reading until the target has drained
/// to half of that.
enum Backpressure {
    static let highWater = 512 * 1024

    /// Call after moving bytes from `source` into `target`. Once drained, `source` reads again if
    /// `mayResume` still says so (a source that has ended stays off).
    static func apply(source: any ByteStream, target: any ByteStream, mayResume: @escaping () -> Bool) {
        guard target.pendingOutputBytes > highWater else { return }
        source.setReading(false)
        target.setDrainedMark(highWater / 2)
        target.onDrained = { target in
            target.onDrained = nil
            target.setDrainedMark(0)
            if mayResume() { source.setReading(true) }
        }
    }
}
