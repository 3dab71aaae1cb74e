/// What one call to ``ChunkedBodyScanner/scan(_:)`` found.
package struct ChunkScan: Sendable, Hashable {
    /// How many of the given bytes, from the start, belong to the chunked body. Relay exactly
    /// these; when `finished`, the bytes after them start the next message.
    package var consumed: Int
    /// The body ended (last chunk and trailer section included) within the consumed bytes.
    package var finished: Bool
    /// How many of the consumed bytes are chunk data: the body's own bytes, without the framing.
    package var payload: Int

    package init(consumed: Int, finished: Bool, payload: Int = 0) {
        self.consumed = consumed
        self.finished = finished
        self.payload = payload
    }
}
