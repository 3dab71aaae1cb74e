import TLSInspection

/// Two ``CiphertextTransport``s joined back to back with no socket: what one end flushes, the
/// other receives, in order. Either end can be closed; its peer then reads what is left and then
/// the end. Each end keeps everything it flushed, so a test can look at the records on the wire.
///
/// Not thread-safe: a test drives both ends from one thread.
struct LinkedTransports {
    /// One direction of the link.
    final class Pipe {
        fileprivate var bytes: [UInt8] = []
        fileprivate var head = 0
        fileprivate var closed = false
        /// Everything written into the pipe, read or not.
        fileprivate(set) var log: [UInt8] = []
        var unread: Int { bytes.count - head }
    }

    /// One end: receives from one pipe, flushes into the other.
    final class End: CiphertextTransport {
        private let incoming: Pipe
        private let outgoing: Pipe
        /// Written by the stream and not flushed yet: empty after every stream call.
        private(set) var queued: [UInt8] = []

        fileprivate init(incoming: Pipe, outgoing: Pipe) {
            self.incoming = incoming
            self.outgoing = outgoing
        }

        /// Everything this end has flushed to its peer.
        var sent: [UInt8] { outgoing.log }
        /// Bytes the peer flushed that this end has not read yet.
        var unread: Int { incoming.unread }

        /// Ends this end's sending, as a FIN would: the peer reads what is left, then the end.
        func close() { outgoing.closed = true }

        func receiveCiphertext(into buffer: UnsafeMutableRawBufferPointer) -> CiphertextRead {
            guard incoming.unread > 0 else { return incoming.closed ? .ended : .nothingYet }
            let count = min(buffer.count, incoming.unread)
            incoming.bytes.withUnsafeBytes { all in
                buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: all[incoming.head..<(incoming.head + count)]))
            }
            incoming.head += count
            // Compact now and then, so a long transfer does not keep every byte it carried.
            if incoming.head > 65_536, incoming.head * 2 > incoming.bytes.count {
                incoming.bytes.removeFirst(incoming.head)
                incoming.head = 0
            }
            return .bytes(count)
        }

        func queueCiphertext(_ bytes: UnsafeRawBufferPointer) { queued += bytes }

        func flushCiphertext() {
            // After a close the bytes go nowhere, as on a socket shut down for writing.
            if !outgoing.closed { outgoing.bytes += queued }
            outgoing.log += queued
            queued = []
        }
    }

    let client: End
    let server: End

    init() {
        let up = Pipe()
        let down = Pipe()
        client = End(incoming: down, outgoing: up)
        server = End(incoming: up, outgoing: down)
    }
}
