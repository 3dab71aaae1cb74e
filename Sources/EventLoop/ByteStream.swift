/// A two-way byte stream as the proxy's sessions use one: an input buffer filled by the peer, an
/// output buffer drained to it, reading that can be paused (backpressure), half-close, time limits,
/// and callbacks for what happened. A socket on an event loop (``SocketStream``) in the proxy; a
/// scripted stream in tests, which drive a session with no socket, no loop and no sleep.
///
/// Callbacks run only from the stream's own loop (or from the test driving it), never from inside
/// one of its methods: a callback may close the stream, or write to another, without re-entering
/// the one that called it.
package protocol ByteStream: AnyObject {
    /// Bytes waiting in the input buffer.
    var availableBytes: Int { get }
    /// Bytes queued for the peer and not yet handed to it.
    var pendingOutputBytes: Int { get }
    /// Whether bytes wait for the peer to take them (queued, or sent and not yet acknowledged).
    var hasBytesWaiting: Bool { get }
    /// When a byte last moved either way (``MonotonicClock`` milliseconds).
    var lastActivity: Int64 { get }
    /// Whether ``close()`` has not run yet.
    var isOpen: Bool { get }
    /// Whether reading is on (off after ``setReading(_:)`` turned it off, an end, an error or a timeout).
    var isReading: Bool { get }

    /// Takes up to `maximum` bytes of the input.
    func read(maximum: Int) -> [UInt8]
    /// Looks at up to `maximum` bytes of the input without taking them.
    func peek(maximum: Int) -> [UInt8]
    /// Discards the first `count` bytes of the input.
    func discardInput(_ count: Int)
    /// Queues `bytes` for the peer and writes what it takes at once.
    func write(_ bytes: [UInt8])
    /// As ``write(_:)-([UInt8])``, holding a reference to `shared` instead of a copy where the stream
    /// can (a socket's output buffer); others copy.
    func write(_ shared: SharedBytes)
    /// Moves the whole input to `other`'s output (without copying, between two sockets).
    func moveInput(to other: any ByteStream)
    /// Moves at most `maximum` bytes of the input to `other`'s output; returns how many moved.
    @discardableResult
    func moveInput(to other: any ByteStream, maximum: Int) -> Int
    /// Moves up to `buffer.count` bytes of the input into `buffer`; returns how many.
    func takeInput(into buffer: UnsafeMutableRawBufferPointer) -> Int
    /// Queues `bytes` without writing them yet: a producer that writes in pieces (TLS records)
    /// calls ``flush()`` once it is done.
    func queue(_ bytes: UnsafeRawBufferPointer)
    /// Writes what the peer takes of the queued output now (the rest when it can).
    func flush()
    /// Calls ``onReadable`` soon, from the loop, whatever the input holds (a layered reader's wake-up).
    func noteReadable()
    /// Whether the peer ended its side and nothing more will arrive (what is buffered may still be read).
    var inputEnded: Bool { get }
    /// Whether the peer's end, once ``inputEnded``, says that it sent all it meant to: a socket's
    /// FIN does; a TLS session's end does only with close_notify before it (an end without one
    /// cannot be told from a cut). False while the input has not ended.
    var inputEndedCleanly: Bool { get }

    /// Stops or resumes reading.
    func setReading(_ enabled: Bool)
    /// Reads what the peer has already sent, without waiting and without calling ``onReadable``.
    func readImmediately()
    /// Calls ``onDrained`` once the output falls to `low` bytes.
    func setDrainedMark(_ low: Int)
    /// Read and write time limits; nil removes them.
    func setTimeouts(read: Duration?, write: Duration?)
    /// Half-closes: no more bytes from us once the output is written.
    func shutdownWrite()
    /// Closes both ways and drops the callbacks. Idempotent.
    func close()
    /// Closes abortively, so that the peer cannot take what it received for all there was: a
    /// socket sends a reset (TCP RST) instead of its FIN; a TLS session sends no close_notify and
    /// resets its transport. What the output still holds is dropped, and so may be what the kernel
    /// has not sent yet: an owner that means the peer to have what it queued waits for the output
    /// to drain first (``setDrainedMark(_:)``). Drops the callbacks as ``close()`` does;
    /// idempotent, and nothing after ``close()``.
    func reset()

    var onReadable: ((any ByteStream) -> Void)? { get set }
    var onDrained: ((any ByteStream) -> Void)? { get set }
    var onEvent: ((any ByteStream, StreamEvent) -> Void)? { get set }
}

extension ByteStream {
    package func write(_ shared: SharedBytes) { write(shared.bytes) }
    /// Takes the whole input.
    package func read() -> [UInt8] { read(maximum: .max) }
    /// Looks at the whole input.
    package func peek() -> [UInt8] { peek(maximum: .max) }
}
