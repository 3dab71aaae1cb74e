/// The few parts of DNS (RFC 1035) the WireGuard tunnel's resolver reads and writes: a query's
/// question, an answer made from the hosts file, and the addresses in a forwarded answer. Queries
/// are otherwise forwarded byte for byte; nothing here is a resolver.
package enum DNSMessage {
    package static let typeA: UInt16 = 1
    package static let typeAAAA: UInt16 = 28

    /// A query's one question.
    package struct Question: Sendable, Equatable {
        package var id: UInt16
        /// Lower case, without the final dot.
        package var name: String
        package var type: UInt16
        package var dnsClass: UInt16
        /// Where the question ends in the message (the answer copies the bytes before it).
        package var end: Int
    }

    /// The question of a standard query (QR 0, opcode 0, exactly one question); nil for anything else.
    package static func question(of message: [UInt8]) -> Question? {
        guard message.count >= 12, message[2] & 0x80 == 0, message[2] & 0x78 == 0, word(message, 4) == 1 else {
            return nil
        }
        guard let (name, after) = readName(message, at: 12), after + 4 <= message.count else { return nil }
        return Question(
            id: word(message, 0), name: name, type: word(message, after), dnsClass: word(message, after + 2),
            end: after + 4)
    }

    /// The answer to `query` from the hosts file: `addresses` (4 or 16 bytes each) of the question's
    /// type, TTL 60 s; none is a NODATA answer (the name exists, with no address of that type), as
    /// is any other type's question (HTTPS, SVCB: their address hints would bypass the file).
    package static func answer(to query: [UInt8], _ question: Question, addresses: [[UInt8]]) -> [UInt8] {
        var message = Array(query[0..<question.end])
        // QR, the query's RD, RA; NOERROR. No authority or additional records (EDNS dropped).
        message[2] = 0x80 | (query[2] & 0x01)
        message[3] = 0x80
        let size = question.type == typeA ? 4 : question.type == typeAAAA ? 16 : -1
        let records = addresses.filter { $0.count == size }
        put(&message, 6, UInt16(records.count))
        put(&message, 8, 0)
        put(&message, 10, 0)
        for address in records {
            message += [0xC0, 0x0C]  // The name: a pointer to the question's.
            message += bytes(question.type) + bytes(1) + [0, 0, 0, 60] + bytes(UInt16(address.count)) + address
        }
        return message
    }

    /// The A and AAAA records of an answer (following CNAMEs: every address answers the question),
    /// with the question's name; nil when the message is no answer or is malformed.
    package static func addresses(in message: [UInt8]) -> (name: String, addresses: [[UInt8]])? {
        guard message.count >= 12, message[2] & 0x80 != 0, word(message, 4) == 1 else { return nil }
        guard let (name, afterName) = readName(message, at: 12) else { return nil }
        var offset = afterName + 4
        var found: [[UInt8]] = []
        for _ in 0..<Int(word(message, 6)) {
            guard let (_, afterOwner) = readName(message, at: offset), afterOwner + 10 <= message.count else {
                return nil
            }
            let type = word(message, afterOwner)
            let length = Int(word(message, afterOwner + 8))
            let data = afterOwner + 10
            guard data + length <= message.count else { return nil }
            if (type == typeA && length == 4) || (type == typeAAAA && length == 16) {
                found.append(Array(message[data..<(data + length)]))
            }
            offset = data + length
        }
        return (name, found)
    }

    /// A name at `offset`, following compression pointers (at most 16, so a loop ends); the
    /// offset after it where it sits in the message.
    private static func readName(_ message: [UInt8], at start: Int) -> (String, Int)? {
        var labels: [String] = []
        var offset = start
        var end: Int?
        var jumps = 0
        while true {
            guard offset < message.count else { return nil }
            let length = Int(message[offset])
            if length == 0 {
                return (labels.joined(separator: ".").lowercased(), end ?? offset + 1)
            }
            if length & 0xC0 == 0xC0 {
                guard offset + 1 < message.count, jumps < 16 else { return nil }
                if end == nil { end = offset + 2 }
                offset = (length & 0x3F) << 8 | Int(message[offset + 1])
                jumps += 1
                continue
            }
            guard length < 64, offset + 1 + length <= message.count else { return nil }
            labels.append(String(decoding: message[(offset + 1)...(offset + length)], as: UTF8.self))
            guard labels.count <= 127 else { return nil }
            offset += 1 + length
        }
    }

    private static func word(_ message: [UInt8], _ offset: Int) -> UInt16 {
        UInt16(message[offset]) << 8 | UInt16(message[offset + 1])
    }

    private static func put(_ message: inout [UInt8], _ offset: Int, _ value: UInt16) {
        message[offset] = UInt8(value >> 8)
        message[offset + 1] = UInt8(value & 0xFF)
    }

    private static func bytes(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
}
