/// Bytes that many streams' output buffers hold at once without a copy each: one server-sent event
/// written to every open stream (``SocketStream/write(_:)-shared``). Immutable once made, and
/// loop-confined; freed when no buffer holds it any more (each holds a reference until its socket
/// has taken the bytes) and no one else keeps it.
package final class SharedBytes {
    let base: UnsafeMutableRawPointer
    package let count: Int

    package init(_ bytes: [UInt8]) {
        count = bytes.count
        base = UnsafeMutableRawPointer.allocate(byteCount: max(1, bytes.count), alignment: 1)
        bytes.withUnsafeBytes { if let source = $0.baseAddress { base.copyMemory(from: source, byteCount: $0.count) } }
    }

    deinit { base.deallocate() }

    /// A copy, for a stream that cannot hold a reference.
    package var bytes: [UInt8] { Array(UnsafeRawBufferPointer(start: base, count: count)) }
}
