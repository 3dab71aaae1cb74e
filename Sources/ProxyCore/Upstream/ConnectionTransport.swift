import EventLoop
import TLSInspection

/// A ``Connection`` as the ciphertext transport under a ``TLSStream``: records are read from its
/// input buffer and queued on its output, which is written once per OpenSSL call.
final class ConnectionTransport: CiphertextTransport {
    let connection: Connection

    init(_ connection: Connection) { self.connection = connection }

    func receiveCiphertext(into buffer: UnsafeMutableRawBufferPointer) -> CiphertextRead {
        let count = connection.takeInput(into: buffer)
        if count > 0 { return .bytes(count) }
        return connection.inputEnded ? .ended : .nothingYet
    }

    func queueCiphertext(_ bytes: UnsafeRawBufferPointer) { connection.queue(bytes) }

    func flushCiphertext() { connection.flush() }
}
