internal import COpenSSL
internal import CProxyShims

/// The BIO type under every ``TLSStream``: reads and writes go to the stream's
/// ``CiphertextTransport``, with no buffer of its own (libevent's `BIO_new_bufferevent` and
/// swift-nio-ssl's `ByteBufferBIO` are the models; a BIO pair would add a fixed 2 x 17 KiB and partial
/// writes, memory BIOs a copy and buffers that never shrink).
///
/// - read: the transport's bytes; none yet is a retryable -1 (`SSL_ERROR_WANT_READ`), the peer's
///   end a 0 with no retry flag (OpenSSL then reports an unexpected EOF, or a clean one after
///   close_notify).
/// - write: always the whole length, queued by the transport; flushed by the stream after each
///   OpenSSL call.
/// - ctrl: only FLUSH answers 1 (OpenSSL flushes after each flight); the rest 0.
///
/// The BIO's data is its stream, unretained: the stream owns the `SSL`, which owns the BIO, and
/// OpenSSL calls the BIO only inside the stream's own calls.
final class TransportBIOMethod: @unchecked Sendable {
    /// Made once per process, never freed; immutable once made, so shared by every thread.
    static let shared = TransportBIOMethod()

    let raw: OpaquePointer?

    private init() {
        let type = BIO_get_new_index() | BIO_TYPE_SOURCE_SINK
        guard let method = BIO_meth_new(type, "atsproxy-transport") else {
            raw = nil
            return
        }
        _ = BIO_meth_set_create(method) { bio in
            BIO_set_init(bio, 1)
            return 1
        }
        _ = BIO_meth_set_destroy(method) { bio in
            BIO_set_data(bio, nil)
            return 1
        }
        _ = BIO_meth_set_read(method) { bio, data, length in
            guard let bio else { return -1 }
            CProxyShims_BIO_clear_retry_flags(bio)
            guard let data, length > 0, let stream = TransportBIOMethod.stream(of: bio) else { return 0 }
            switch stream.transport.receiveCiphertext(
                into: UnsafeMutableRawBufferPointer(start: data, count: Int(length)))
            {
            case .bytes(let count):
                return Int32(count)
            case .nothingYet:
                CProxyShims_BIO_set_retry_read(bio)
                return -1
            case .ended:
                return 0
            }
        }
        _ = BIO_meth_set_write(method) { bio, data, length in
            guard let bio else { return -1 }
            CProxyShims_BIO_clear_retry_flags(bio)
            guard let data, length > 0, let stream = TransportBIOMethod.stream(of: bio) else { return 0 }
            stream.transport.queueCiphertext(UnsafeRawBufferPointer(start: data, count: Int(length)))
            return length
        }
        _ = BIO_meth_set_ctrl(method) { _, command, _, _ in
            command == BIO_CTRL_FLUSH ? 1 : 0
        }
        raw = method
    }

    private static func stream(of bio: OpaquePointer) -> TLSStream? {
        BIO_get_data(bio).map { Unmanaged<TLSStream>.fromOpaque($0).takeUnretainedValue() }
    }
}
