/// ClientHellos built by hand, for tests that need the proxy to see a hello no TLS library would
/// send: one well over 64 KiB, or one broken in a chosen way. Each is a real TLS 1.3 offer
/// (x25519 key share, RSA-PSS signatures, TLS_AES_128_GCM_SHA256) that `openssl s_server` answers
/// with a ServerHello, unless it was broken on purpose.
package struct TestClientHello: Sendable {
    /// The largest ClientHello message (header included) OpenSSL's servers accept: 4 + 131,396.
    package static let openSSLLimit = 4 + 131_396
    /// The largest hello these fields can make: both the suites (65,534 bytes) and the extensions
    /// (65,535) are full. Any real hello is smaller, so OpenSSL's limit is never the one that binds.
    package static let largestPossible = 131_000

    /// The server_name host_name's bytes; nil sends no server_name extension.
    package var serverName: [UInt8]? = Array("localhost".utf8)
    /// A second host_name entry in the server_name list (which RFC 6066 §3 forbids).
    package var secondServerName: [UInt8]?
    /// Unassigned suite values sent after the real one, which a server skips: the way to grow a
    /// hello past what the extensions block (at most 65,535 bytes) can hold.
    package var extraCipherSuites = 0
    /// The padding extension's (21, RFC 7685) length, when sent.
    package var padding: Int?
    /// Overrides the cipher_suites vector's length field (to break the hello).
    package var cipherSuitesLengthOverride: Int?

    package init() {}

    package init(serverName: String?) { self.serverName = serverName.map { Array($0.utf8) } }

    /// A hello of exactly `size` bytes (its 4-byte handshake header included), grown with cipher
    /// suites and padding; `size` must be at least 2 KiB.
    package static func sized(_ size: Int) -> TestClientHello {
        var hello = TestClientHello()
        let base = hello.message.count + 4  // the padding extension's own header
        let growth = size - base
        precondition(growth >= 0, "a hello of \(size) bytes is smaller than the \(base) the offer needs")
        // Padding first, as much as the extensions block (at most 65,535 bytes) takes, then suites.
        hello.extraCipherSuites = max(0, growth - 65_300) / 2
        hello.padding = growth - 2 * hello.extraCipherSuites
        precondition(hello.message.count == size)
        return hello
    }

    /// The handshake message: msg_type 1, a 24-bit length, the body.
    package var message: [UInt8] {
        let body = self.body
        return [1, UInt8(body.count >> 16 & 0xFF), UInt8(body.count >> 8 & 0xFF), UInt8(body.count & 0xFF)] + body
    }

    /// The message in handshake records of at most `fragment` bytes each (16,384: full records).
    package func records(fragment: Int = 16_384) -> [UInt8] {
        TestClientHello.records(message, fragment: fragment)
    }

    /// `bytes` in handshake records of at most `fragment` bytes each, record version 3.1.
    package static func records(_ bytes: [UInt8], fragment: Int = 16_384) -> [UInt8] {
        stride(from: 0, to: bytes.count, by: fragment).flatMap { start in
            let part = bytes[start..<min(bytes.count, start + fragment)]
            return [22, 3, 1] + uint16(part.count) + part
        }
    }

    private var body: [UInt8] {
        var suites = uint16(0x1301)
        for index in 0..<extraCipherSuites { suites += uint16(0xFF00 &+ UInt16(index % 0xF0)) }
        var bytes =
            uint16(0x0303) + [UInt8](repeating: 0x5A, count: 32) + vector(1, [UInt8](repeating: 0xAB, count: 32))
        bytes += uint16(cipherSuitesLengthOverride ?? suites.count) + suites + vector(1, [0])
        var extensions: [UInt8] = []
        if let serverName {
            var list = [0] + vector(2, serverName)
            if let secondServerName { list += [0] + vector(2, secondServerName) }
            extensions += Self.ext(0, vector(2, list))
        }
        extensions += Self.ext(43, vector(1, uint16(0x0304)))
        extensions += Self.ext(10, vector(2, uint16(0x001D)))
        extensions += Self.ext(13, vector(2, uint16(0x0804) + uint16(0x0805) + uint16(0x0806)))
        // x25519's base point: a valid public key, so the server computes a shared secret.
        extensions += Self.ext(51, vector(2, uint16(0x001D) + vector(2, [9] + [UInt8](repeating: 0, count: 31))))
        if let padding { extensions += Self.ext(21, [UInt8](repeating: 0, count: padding)) }
        return bytes + vector(2, extensions)
    }

    private static func ext(_ type: UInt16, _ data: [UInt8]) -> [UInt8] { uint16(Int(type)) + vector(2, data) }
}

private func uint16(_ value: Int) -> [UInt8] { [UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
private func uint16(_ value: UInt16) -> [UInt8] { uint16(Int(value)) }
private func vector(_ lengthBytes: Int, _ body: [UInt8]) -> [UInt8] {
    (lengthBytes == 1 ? [UInt8(body.count)] : uint16(body.count)) + body
}
