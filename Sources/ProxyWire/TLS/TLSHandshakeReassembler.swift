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
/// the caller, so the buffer never holds more than one message of at most `limit` bytes. A
/// message that arrives whole in one input is not copied at all: its body is a slice of the input.
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
    mutating func consume(_ input: ArraySlice<UInt8>, expecting expectedType: UInt8) -> (consumed: Int, event: Event) {
        if headerBytesSeen == 0, let message = Self.wholeMessage(in: input, expecting: expectedType, limit: limit) {
            return (Self.headerSize + message.body.count, .message(message))
        }
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

    /// The message at the start of `input` if all of it is there and it is what the byte by byte
    /// path would accept (the expected type, within `limit`): the usual case, where a hello comes
    /// in one record and one read. Anything else is left to that path, which also reports the
    /// errors; the chunking tests check that both give the same messages.
    private static func wholeMessage(in input: ArraySlice<UInt8>, expecting expectedType: UInt8, limit: Int)
        -> TLSHandshakeMessage?
    {
        let start = input.startIndex
        guard input.count >= headerSize, input[start] == expectedType else { return nil }
        let length = Int(input[start + 1]) << 16 | Int(input[start + 2]) << 8 | Int(input[start + 3])
        guard headerSize + length <= limit, headerSize + length <= input.count else { return nil }
        return TLSHandshakeMessage(
            type: expectedType, body: input[(start + headerSize)..<(start + headerSize + length)])
    }
}
