import EventLoop

/// DNS over TCP (RFC 7766), each message behind its two-byte length: a device's connection to the
/// tunnel resolver (``TunnelResolver``), which a device opens when a UDP answer came truncated, and
/// the resolver's own connection to the host's resolver for each such query, since forwarding it
/// over UDP would only truncate the answer again.
///
/// One message at a time each way: a device's next query is read once its answer is written, and
/// an upstream connection carries one query and is closed with its answer. On the main thread.
final class TunnelResolverStream {
    /// What the owner does with each whole message: answers it (``send(_:)``) or not.
    private let onMessage: (TunnelResolverStream, [UInt8]) -> Void
    private let onEnd: (TunnelResolverStream) -> Void
    private let stream: SocketStream
    /// Whether a message was handed to the owner and its answer is not written yet.
    private var awaitingAnswer = false
    /// The peer closed its side after its query: the answer is written, then the connection closed.
    private var peerEnded = false
    /// When the message being read began (``MonotonicClock`` milliseconds): the idle limit bounds
    /// each whole message from its first byte, so a peer trickling one cannot hold the connection.
    private var messageSince: Int64?
    private let idleLimit: Duration

    /// How long a device's connection may sit without a whole message, as RFC 7766 lets a server
    /// close idle connections (it suggests seconds); an upstream one gets the resolver's timeout.
    static let idleLimit: Duration = .seconds(10)

    init(
        stream: SocketStream, idleLimit: Duration = TunnelResolverStream.idleLimit,
        onMessage: @escaping (TunnelResolverStream, [UInt8]) -> Void, onEnd: @escaping (TunnelResolverStream) -> Void
    ) {
        self.stream = stream
        self.onMessage = onMessage
        self.onEnd = onEnd
        self.idleLimit = idleLimit
        stream.setTimeouts(read: idleLimit, write: idleLimit)
        stream.onReadable = { [unowned self] _ in readMessages() }
        stream.onEvent = { [unowned self] _, event in
            switch event {
            case .connected: return
            case .endOfStream where awaitingAnswer: peerEnded = true  // Its answer still goes.
            case .endOfStream where stream.pendingOutputBytes > 0: endWhenWritten()
            default: end()
            }
        }
        stream.setReading(true)
    }

    /// Writes `message` behind its length, and reads the next one.
    func send(_ message: [UInt8]) {
        guard stream.isOpen, message.count <= Int(UInt16.max) else { return end() }
        stream.write([UInt8(message.count >> 8), UInt8(message.count & 0xFF)] + message)
        awaitingAnswer = false
        guard !peerEnded else { return endWhenWritten() }
        stream.setReading(true)
        if stream.availableBytes > 0 { stream.noteReadable() }
    }

    /// Closes the connection (what is written still goes) and tells the owner, once.
    func end() {
        guard stream.isOpen else { return }
        stream.close()
        onEnd(self)
    }

    /// Closes once what is written has gone: the peer has what it was sent before it closed.
    private func endWhenWritten() {
        stream.setReading(false)
        stream.onDrained = { [unowned self] _ in end() }
        stream.setDrainedMark(0)
    }

    private func readMessages() {
        guard !awaitingAnswer else { return stream.setReading(false) }
        guard stream.availableBytes > 0 else { return }
        let head = stream.peek(maximum: 2)
        let length = head.count == 2 ? Int(head[0]) << 8 | Int(head[1]) : nil
        if length == 0 { return end() }
        guard let length, stream.availableBytes >= 2 + length else {
            // Part of a message: what is left of its limit bounds the next read.
            let now = MonotonicClock.nowMilliseconds()
            let since = messageSince ?? now
            messageSince = since
            let left = idleLimit.milliseconds - (now - since)
            guard left > 0 else { return end() }
            return stream.setTimeouts(read: .milliseconds(left), write: idleLimit)
        }
        messageSince = nil
        stream.setTimeouts(read: idleLimit, write: idleLimit)
        stream.discardInput(2)
        let message = stream.read(maximum: length)
        awaitingAnswer = true
        stream.setReading(false)
        onMessage(self, message)
    }
}
