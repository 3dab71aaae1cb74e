/// The body bytes queued for one stream and not yet framed, and how the body ends: what the
/// session's data provider hands libnghttp2 as the peer's windows open.
struct StreamOutput {
    enum End: Equatable {
        case open
        /// No more bytes after those queued: END_STREAM, or trailers when there are any.
        case ended(trailers: [HTTP2Field])
    }

    private var bytes: [UInt8] = []
    private var start = 0
    var end = End.open

    var count: Int { bytes.count - start }

    mutating func append(_ more: UnsafeRawBufferPointer) {
        // What was taken is dropped once it is most of the buffer, so the buffer holds what is queued.
        if start > 0, start >= bytes.count / 2 {
            bytes.removeFirst(start)
            start = 0
        }
        bytes.append(contentsOf: more)
    }

    /// Copies up to `length` queued bytes to `target` and drops them: how many.
    mutating func take(into target: UnsafeMutablePointer<UInt8>, length: Int) -> Int {
        let taken = min(length, count)
        guard taken > 0 else { return 0 }
        bytes.withUnsafeBufferPointer { source in
            target.update(from: source.baseAddress! + start, count: taken)
        }
        start += taken
        if start == bytes.count {
            bytes.removeAll(keepingCapacity: bytes.capacity <= 64 * 1024)
            start = 0
        }
        return taken
    }
}
