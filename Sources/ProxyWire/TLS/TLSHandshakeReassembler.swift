/// One complete handshake message: `msg_type` and the body after its 24-bit length.
struct TLSHandshakeMessage: Equatable {
    let type: UInt8
    let body: ArraySlice<UInt8>
}

/// Rebuilds handshake messages from the bodies of handshake records.
///
/// A message may span several records and several messages may share one
/// (RFC 8446 §5.1, RFC 5246 §6.2.1), so record boundaries mean nothing here. Each message is
///
///     HandshakeType msg_type;    // RFC 8446 §4
///     uint24 length;
///     ...body
///
/// Memory is bounded: the message's declared length is checked against `limit` as soon as its
/// 4-byte header is in, before its body is copied, and bytes past the message's end are left for
/// the caller, so the buffer never holds more than one message of at most `limit` bytes.
struct TLSHandshakeReassembler: Sendable {
    static let headerSize = 4

    enum Event: Equatable {
        case needMoreData
        case message(TLSHandshakeMessage)
        /// The first byte of a message is not the type the caller expects.
        case unexpectedType(UInt8)
        /// The message would not fit in `limit` bytes (its header included).
        case tooLarge(type: UInt8, declaredLength: Int)
    }

    let limit: Int
    private var buffer: [UInt8] = []

    init(limit: Int) { self.limit = limit }

    /// Part of a message is buffered, so another record type may not come next
    /// (RFC 8446 §5.1: handshake messages "MUST NOT be interleaved with other record types").
    var isInsideMessage: Bool { !buffer.isEmpty }

    /// Copies bytes of `input` up to the end of the current message, at most. Returns how many
    /// were used; the caller feeds the rest again after handling a `.message`.
    mutating func consume<Bytes: Collection<UInt8>>(
        _ input: Bytes,
        expecting expectedType: UInt8
    ) -> (consumed: Int, event: Event) where Bytes.SubSequence == Bytes {
        var rest = input
        if buffer.count < Self.headerSize {
            let headerPart = rest.prefix(Self.headerSize - buffer.count)
            buffer.append(contentsOf: headerPart)
            rest = rest.dropFirst(headerPart.count)
            if let type = buffer.first, type != expectedType {
                buffer = []
                return (input.count - rest.count, .unexpectedType(type))
            }
            guard buffer.count == Self.headerSize else { return (input.count - rest.count, .needMoreData) }
            if Self.headerSize + declaredLength > limit {
                let type = buffer[0]
                let length = declaredLength
                buffer = []
                return (input.count - rest.count, .tooLarge(type: type, declaredLength: length))
            }
            buffer.reserveCapacity(Self.headerSize + declaredLength)
        }
        let total = Self.headerSize + declaredLength
        let bodyPart = rest.prefix(total - buffer.count)
        buffer.append(contentsOf: bodyPart)
        rest = rest.dropFirst(bodyPart.count)
        let consumed = input.count - rest.count
        guard buffer.count == total else { return (consumed, .needMoreData) }
        let message = TLSHandshakeMessage(type: buffer[0], body: buffer[Self.headerSize...])
        buffer = []
        return (consumed, .message(message))
    }

    /// The 24-bit length of the buffered header; only valid once the header is complete.
    private var declaredLength: Int {
        Int(buffer[1]) << 16 | Int(buffer[2]) << 8 | Int(buffer[3])
    }
}
