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
    /// How many of the current message's 4 header bytes have arrived, and what they said so far.
    /// The header is kept apart from the body so the body's buffer is allocated once, at the
    /// size the header declares.
    private var headerBytesSeen = 0
    private var messageType: UInt8 = 0
    private var declaredLength = 0
    private var body: [UInt8] = []

    init(limit: Int) { self.limit = limit }

    /// Part of a message is buffered, so another record type may not come next
    /// (RFC 8446 §5.1: handshake messages "MUST NOT be interleaved with other record types").
    var isInsideMessage: Bool { headerBytesSeen > 0 }

    /// Copies bytes of `input` up to the end of the current message, at most. Returns how many
    /// were used; the caller feeds the rest again after handling a `.message`.
    mutating func consume<Bytes: Collection<UInt8>>(
        _ input: Bytes,
        expecting expectedType: UInt8
    ) -> (consumed: Int, event: Event) where Bytes.SubSequence == Bytes {
        var rest = input
        while headerBytesSeen < Self.headerSize, let byte = rest.first {
            rest = rest.dropFirst()
            headerBytesSeen += 1
            if headerBytesSeen == 1 {
                guard byte == expectedType else {
                    self = TLSHandshakeReassembler(limit: limit)
                    return (input.count - rest.count, .unexpectedType(byte))
                }
                messageType = byte
                continue
            }
            declaredLength = declaredLength << 8 | Int(byte)
            if headerBytesSeen == Self.headerSize {
                if Self.headerSize + declaredLength > limit {
                    let event = Event.tooLarge(type: messageType, declaredLength: declaredLength)
                    self = TLSHandshakeReassembler(limit: limit)
                    return (input.count - rest.count, event)
                }
                body.reserveCapacity(declaredLength)
            }
        }
        guard headerBytesSeen == Self.headerSize else { return (input.count - rest.count, .needMoreData) }
        let bodyPart = rest.prefix(declaredLength - body.count)
        body.append(contentsOf: bodyPart)
        rest = rest.dropFirst(bodyPart.count)
        let consumed = input.count - rest.count
        guard body.count == declaredLength else { return (consumed, .needMoreData) }
        let message = TLSHandshakeMessage(type: messageType, body: body[...])
        self = TLSHandshakeReassembler(limit: limit)
        return (consumed, .message(message))
    }
}
