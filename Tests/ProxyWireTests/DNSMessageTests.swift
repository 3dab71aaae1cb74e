import ProxyWire
import Testing

/// The few parts of DNS the WireGuard tunnel's resolver reads and writes.
@Suite("DNS messages: a query's question, a hosts-file answer, a forwarded answer's addresses")
struct DNSMessageTests {
    /// A query for `name`, type `type`, id 0x4154, recursion desired.
    static func query(_ name: String, type: UInt16 = DNSMessage.typeA) -> [UInt8] {
        let header: [UInt8] = [0x41, 0x54, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]
        let labels: [UInt8] = name.split(separator: ".").flatMap { label -> [UInt8] in
            [UInt8(label.utf8.count)] + Array(label.utf8)
        }
        let tail: [UInt8] = [0, UInt8(type >> 8), UInt8(type & 0xFF), 0, 1]
        return header + labels + tail
    }

    @Test("a query's question: id, name in lower case, type, class; anything else is no query")
    func question() throws {
        let question = try #require(DNSMessage.question(of: Self.query("Good.WG.test", type: DNSMessage.typeAAAA)))
        #expect(question.id == 0x4154 && question.name == "good.wg.test")
        #expect(question.type == DNSMessage.typeAAAA && question.dnsClass == 1)
        #expect(question.end == Self.query("good.wg.test").count)
        var answer = Self.query("good.wg.test")
        answer[2] |= 0x80
        #expect(DNSMessage.question(of: answer) == nil, "an answer is no query")
        #expect(DNSMessage.question(of: Array(Self.query("good.wg.test").dropLast(2))) == nil, "cut short")
        var looped = Self.query("a")
        looped.replaceSubrange(12..<15, with: [0xC0, 0x0C])
        #expect(DNSMessage.question(of: looped) == nil, "a pointer to itself ends")
    }

    @Test("the hosts file's answer: the question's type only, a pointer to its name, TTL 60; none is NODATA")
    func answer() throws {
        let query = Self.query("good.wg.test")
        let question = try #require(DNSMessage.question(of: query))
        let v4: [UInt8] = [10, 78, 0, 3]
        let v6 = [UInt8](repeating: 0, count: 15) + [1]
        let answer = DNSMessage.answer(to: query, question, addresses: [v4, v6])
        #expect(answer[0..<2] == [0x41, 0x54] && answer[2] == 0x81 && answer[3] == 0x80)
        #expect(answer[6..<8] == [0, 1], "one A record")
        #expect(Array(answer.suffix(16)) == [0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4] + v4)
        let read = try #require(DNSMessage.addresses(in: answer))
        #expect(read.name == "good.wg.test" && read.addresses == [v4])
        let none = DNSMessage.answer(to: query, question, addresses: [v6])
        #expect(none[6..<8] == [0, 0] && none.count == query.count)
        // HTTPS (65): no records at all, so its address hints cannot bypass the hosts file.
        let https = Self.query("good.wg.test", type: 65)
        let httpsAnswer = DNSMessage.answer(
            to: https, try #require(DNSMessage.question(of: https)), addresses: [v4, v6])
        #expect(httpsAnswer[6..<8] == [0, 0] && httpsAnswer.count == https.count)
    }

    @Test("a forwarded answer's addresses, past a CNAME and through compressed names")
    func forwarded() throws {
        var answer = Self.query("www.wg.test")
        answer[2] = 0x81
        answer[3] = 0x80
        answer[7] = 2
        // www.wg.test CNAME cdn.wg.test (the target compressed against the question's "wg.test").
        answer += [0xC0, 0x0C, 0, 5, 0, 1, 0, 0, 0, 60, 0, 6, 3] + Array("cdn".utf8) + [0xC0, 0x10]
        let cname = answer.count - 6
        answer += [0xC0, UInt8(cname), 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 7]
        let read = try #require(DNSMessage.addresses(in: answer))
        #expect(read.name == "www.wg.test" && read.addresses == [[192, 0, 2, 7]])
        #expect(DNSMessage.addresses(in: Array(answer.dropLast(2))) == nil, "a record cut short")
    }
}
