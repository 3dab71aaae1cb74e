/// What a ``TLSStream`` reads its peer's records from and writes its own to: the connection under
/// it, seen as two byte queues. A socket on an event loop in the proxy; two queues joined to each
/// other in tests, where a client and a server stream talk without any socket.
///
/// Calls come only from inside the stream's OpenSSL calls, on the stream's thread; none may call
/// back into the stream.
package protocol CiphertextTransport: AnyObject {
    /// Moves up to `buffer.count` received bytes into `buffer`, oldest first.
    func receiveCiphertext(into buffer: UnsafeMutableRawBufferPointer) -> CiphertextRead

    /// Queues `bytes` for the peer. Never refuses: the caller bounds what it writes by looking at
    /// how much is queued (backpressure), not by partial writes.
    func queueCiphertext(_ bytes: UnsafeRawBufferPointer)

    /// Hands what was queued to the peer: called after every OpenSSL call that may have written,
    /// failed ones included, so an alert is sent even when the handshake fails.
    func flushCiphertext()
}

/// What a transport had for a read.
package enum CiphertextRead: Equatable, Sendable {
    /// This many bytes were moved (at least one).
    case bytes(Int)
    /// Nothing yet: more may come.
    case nothingYet
    /// The peer ended its side, and everything it sent has been read.
    case ended
}
