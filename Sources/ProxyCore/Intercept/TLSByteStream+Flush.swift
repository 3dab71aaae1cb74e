import EventLoop

extension TLSByteStream {
    /// Stops reading, and calls `done` once everything written has left (at once when nothing is
    /// waiting), or when the stream fails or `limit` passes without progress: how an intercepted
    /// connection ends after its last answer, on HTTP/1.1 and HTTP/2 alike. Takes the stream's
    /// callbacks over; `done` may be called again by a later event, so it must be idempotent, as
    /// ending a connection is.
    func whenFlushed(within limit: Duration, _ done: @escaping () -> Void) {
        setReading(false)
        onReadable = nil
        guard pendingOutputBytes > 0 else { return done() }
        setTimeouts(read: nil, write: limit)
        setDrainedMark(0)
        onDrained = { _ in done() }
        onEvent = { _, _ in done() }
    }
}
