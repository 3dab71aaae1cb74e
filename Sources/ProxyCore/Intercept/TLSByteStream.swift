import EventLoop
import Glibc
import TLSInspection

/// The plaintext of one TLS session as a ``ByteStream``: what the HTTP layer of an intercepted
/// tunnel reads and writes, on either leg (the device's, where the proxy is the server, and the
/// origin's, where it is the client). The sessions and exchanges that relay plain HTTP relay the
/// decrypted bytes with the same code.
///
/// Contract, beside ``ByteStream``'s:
/// - Made over a transport whose handshake is complete (``TLSStream/isHandshakeComplete``); from
///   then on it owns the transport's callbacks and is the single owner of the transport, which
///   ``close()`` closes.
/// - Reading: records are decrypted as ciphertext arrives, into a plaintext buffer of at most
///   ``highWater`` bytes; beyond it the transport stops reading (backpressure), and resumes once
///   the reader takes bytes. Callbacks run from the loop, as the transport's own do.
/// - Ends: the peer's close_notify is an ``StreamEvent/endOfStream`` after the last plaintext
///   (``inputEnded``; ``endedCleanly`` true); a connection that ends without one, a truncation, is
///   an end of stream too, with ``endedCleanly`` false. ``shutdownWrite()`` sends close_notify then
///   half-closes the socket. A TLS failure (a bad record, an alert) is `.error(EPROTO)`, with
///   ``failure`` saying what it was.
final class TLSByteStream: ByteStream {
    let transport: any ByteStream
    let tls: TLSStream
    /// Decrypted bytes not yet read, from ``plaintextStart`` on.
    private var plaintext: [UInt8] = []
    private var plaintextStart = 0
    private var reading = true
    /// The peer's end as the TLS layer saw it: nil while it may still send.
    private var peerEnd: Bool?
    private var endReported = false
    private var failed = false
    /// Why the session failed, when it did.
    private(set) var failure: TLSStreamError?
    /// The other leg's peer ended without close_notify: this leg ends without one too.
    private var passesOnTruncation = false

    /// The most plaintext buffered before the transport stops reading.
    static let highWater = 64 * 1024
    /// The largest record's plaintext: what one read asks OpenSSL for.
    private static let recordSize = 16 * 1024

    var onReadable: ((any ByteStream) -> Void)?
    var onDrained: ((any ByteStream) -> Void)?
    var onEvent: ((any ByteStream, StreamEvent) -> Void)?

    init(transport: any ByteStream, tls: TLSStream) {
        self.transport = transport
        self.tls = tls
        reading = transport.isReading
        transport.onReadable = { [unowned self] _ in decryptAndDeliver() }
        transport.onDrained = { [unowned self] _ in onDrained?(self) }
        transport.onEvent = { [unowned self] _, event in transportEvent(event) }
        // Records that came with the handshake's last flight (a request right behind the client's
        // Finished) are already buffered: no socket event will announce them.
        if reading, transport.availableBytes > 0 { transport.noteReadable() }
    }

    /// Whether the peer ended with close_notify (nil while it has not ended).
    var endedCleanly: Bool? { peerEnd }

    // MARK: - Reading

    private func decryptAndDeliver() {
        decrypt()
        deliver()
    }

    /// Decrypts what the transport holds, up to the high-water mark.
    private func decrypt() {
        guard !failed, peerEnd == nil else { return }
        while availableBytes < Self.highWater {
            // A record's plaintext lands in stack space and only what OpenSSL wrote is kept: no
            // buffer is zeroed and trimmed per read.
            let outcome: Result<TLSStream.PlaintextRead, TLSStreamError> = withUnsafeTemporaryAllocation(
                byteCount: Self.recordSize, alignment: 1
            ) { space in
                do throws(TLSStreamError) {
                    let read = try tls.read(into: space)
                    if case .bytes(let count) = read { plaintext.append(contentsOf: space.prefix(count)) }
                    return .success(read)
                } catch {
                    return .failure(error)
                }
            }
            switch outcome {
            case .success(.bytes):
                continue
            case .success(.needsBytes):
                return
            case .success(.ended(let clean)):
                peerEnd = clean
                return
            case .failure(let error):
                failure = error
                failed = true
                return
            }
        }
        // Full: the socket waits until the reader has taken some.
        transport.setReading(false)
    }

    /// Tells the reader what there is: bytes, then the end or the failure, once each.
    private func deliver() {
        guard transport.isOpen else { return }
        if reading, availableBytes > 0 { onReadable?(self) }
        guard transport.isOpen, !endReported else { return }
        if failed {
            // A broken session ends now, whatever plaintext its reader has left unread (a failed
            // write, say, while the reader waits for room to pass bytes on).
            endReported = true
            onEvent?(self, .error(EPROTO))
        } else if peerEnd != nil, availableBytes == 0 {
            endReported = true
            reading = false
            onEvent?(self, .endOfStream)
        }
    }

    private func transportEvent(_ event: StreamEvent) {
        switch event {
        case .endOfStream:
            // The TLS layer reads the end from the transport: a close_notify before it or not.
            decryptAndDeliver()
        case .connected:
            return
        case .error, .timeout:
            onEvent?(self, event)
        }
    }

    /// The reader took bytes: below the mark, the socket may be read again, and what it already
    /// holds must be decrypted without waiting for a byte that may never come.
    private func tookPlaintext() {
        if plaintextStart == plaintext.count {
            // Storage is given back once read: an idle tunnel holds no plaintext buffer.
            plaintext = []
            plaintextStart = 0
        }
        guard reading, availableBytes < Self.highWater, peerEnd == nil, !failed else { return }
        if !transport.isReading { transport.setReading(true) }
        if transport.availableBytes > 0 { transport.noteReadable() }
    }

    // MARK: - ByteStream

    var availableBytes: Int { plaintext.count - plaintextStart }
    var pendingOutputBytes: Int { transport.pendingOutputBytes }
    var hasBytesWaiting: Bool { transport.hasBytesWaiting }
    var lastActivity: Int64 { transport.lastActivity }
    var isOpen: Bool { transport.isOpen }
    var isReading: Bool { transport.isOpen && reading && !endReported }
    var inputEnded: Bool { peerEnd != nil }
    var inputEndedCleanly: Bool { peerEnd == true }

    func read(maximum: Int) -> [UInt8] {
        let count = min(maximum, availableBytes)
        let bytes = Array(plaintext[plaintextStart..<plaintextStart + count])
        plaintextStart += count
        tookPlaintext()
        return bytes
    }

    func peek(maximum: Int) -> [UInt8] {
        Array(plaintext[plaintextStart..<plaintextStart + min(maximum, availableBytes)])
    }

    func discardInput(_ count: Int) {
        plaintextStart += min(count, availableBytes)
        tookPlaintext()
    }

    func takeInput(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let count = min(buffer.count, availableBytes)
        plaintext.withUnsafeBytes { source in
            buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[plaintextStart..<plaintextStart + count]))
        }
        plaintextStart += count
        tookPlaintext()
        return count
    }

    func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { queue($0) }
    }

    func queue(_ bytes: UnsafeRawBufferPointer) {
        guard transport.isOpen, !failed else { return }
        do {
            try tls.write(bytes)
        } catch {
            failure = error
            failed = true
            transport.noteReadable()  // Reported from the loop, not from inside this call.
        }
    }

    func flush() {}  // Each write is flushed by the TLS stream.

    func moveInput(to other: any ByteStream) { _ = moveInput(to: other, maximum: .max) }

    @discardableResult
    func moveInput(to other: any ByteStream, maximum: Int) -> Int {
        let count = min(maximum, availableBytes)
        guard count > 0 else { return 0 }
        plaintext.withUnsafeBytes { source in
            other.queue(UnsafeRawBufferPointer(rebasing: source[plaintextStart..<plaintextStart + count]))
        }
        other.flush()
        plaintextStart += count
        tookPlaintext()
        return count
    }

    func setReading(_ enabled: Bool) {
        guard transport.isOpen, enabled != reading else { return }
        reading = enabled
        if enabled {
            if availableBytes < Self.highWater, peerEnd == nil, !failed { transport.setReading(true) }
            // Bytes, an end or a failure already known are told from the loop.
            if availableBytes > 0 || transport.availableBytes > 0 || peerEnd != nil || failed {
                transport.noteReadable()
            }
        } else {
            transport.setReading(false)
        }
    }

    func readImmediately() {
        transport.readImmediately()
        decrypt()
    }

    func noteReadable() { transport.noteReadable() }

    func setDrainedMark(_ low: Int) { transport.setDrainedMark(low) }

    func setTimeouts(read: Duration?, write: Duration?) { transport.setTimeouts(read: read, write: write) }

    /// A truncation on the other leg is passed on as one: from now on ``shutdownWrite()`` and
    /// ``close()`` end the socket without close_notify, so the peer cannot take a cut-off stream
    /// (a body delimited by the connection's end) for a whole one.
    func passOnTruncation() { passesOnTruncation = true }

    /// close_notify, then the socket's half-close once it is written.
    func shutdownWrite() {
        if !passesOnTruncation { tls.shutdown() }
        transport.shutdownWrite()
    }

    /// Sends close_notify when the session is still sound (so the peer can tell the end from a
    /// truncation), then closes the socket.
    func close() {
        guard transport.isOpen else { return }
        if !failed, !passesOnTruncation { tls.shutdown() }
        onReadable = nil
        onDrained = nil
        onEvent = nil
        transport.close()
    }

    /// Never close_notify: the transport is reset. The records written so far are in the
    /// transport's output already (each write flushes its records there), so an owner that waits
    /// for the output to drain has them reach the peer before the reset.
    func reset() {
        guard transport.isOpen else { return }
        onReadable = nil
        onDrained = nil
        onEvent = nil
        transport.reset()
    }
}
