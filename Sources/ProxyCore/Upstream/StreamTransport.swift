import EventLoop
import TLSInspection

/// A ``ByteStream`` as the ciphertext transport under a ``TLSStream``: records are read from its
/// input buffer and queued on its output, which is written once per OpenSSL call. A socket in the
/// proxy; a scripted stream in tests.
final class StreamTransport: CiphertextTransport {
    let stream: any ByteStream

    init(_ stream: any ByteStream) { self.stream = stream }

    func receiveCiphertext(into buffer: UnsafeMutableRawBufferPointer) -> CiphertextRead {
        let count = stream.takeInput(into: buffer)
        if count > 0 { return .bytes(count) }
        return stream.inputEnded ? .ended : .nothingYet
    }

    func queueCiphertext(_ bytes: UnsafeRawBufferPointer) { stream.queue(bytes) }

    func flushCiphertext() { stream.flush() }
}
