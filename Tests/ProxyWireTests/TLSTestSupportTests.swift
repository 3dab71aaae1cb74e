import Foundation
import ProxyWire
import TLSTestSupport
import Testing

// Helpers shared by the TLS*Tests files (this file is named to match the TLS*Tests.swift pattern
// that keeps the TLS component's tests apart from the HTTP component's), plus checks of the
// helpers themselves.

/// The real captures in Fixtures/tls, made by Fixtures/tls/capture.py.
enum TLSCaptures {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()
        .appendingPathComponent("Fixtures/tls")

    /// Every capture file, client and server side.
    static let allNames = [
        "tls13-client", "tls13-server",
        "tls12-ecdhe-client", "tls12-ecdhe-server",
        "tls12-rsa-client", "tls12-rsa-server",
        "tls10-client", "tls10-server",
        "tls13-hrr-client", "tls13-hrr-server",
        "alert-protocol-version-client", "alert-protocol-version-server",
    ]

    static func bytes(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: directory.appendingPathComponent(name + ".bin")))
    }

    static func direction(of name: String) -> TLSHelloScanner.Direction {
        name.hasSuffix("-client") ? .clientToServer : .serverToClient
    }

    /// The handshake message bytes (4-byte header included) of the first handshake record,
    /// which in every capture holds exactly the hello: OpenSSL sends one message per record.
    static func firstHandshakeMessage(_ name: String) throws -> [UInt8] {
        let capture = try bytes(name)
        try #require(capture.count >= 5 && capture[0] == 22)
        let length = Int(capture[3]) << 8 | Int(capture[4])
        try #require(capture.count >= 5 + length)
        return Array(capture[5..<(5 + length)])
    }
}

/// Scanning helpers.
enum Scan {
    /// Feeds `bytes` in one chunk (`limit`: the scanner's own default, by direction, when nil).
    static func whole(_ bytes: [UInt8], _ direction: TLSHelloScanner.Direction, limit: Int? = nil) -> TLSScanState {
        var scanner = TLSHelloScanner(direction: direction, maximumBufferedBytes: limit)
        return scanner.feed(bytes)
    }

    /// Feeds `bytes` in chunks of the given sizes (the last chunk takes what is left) and returns
    /// the first final state, or `.needMoreData`.
    static func chunked(_ bytes: [UInt8], _ direction: TLSHelloScanner.Direction, sizes: [Int]) -> TLSScanState {
        var scanner = TLSHelloScanner(direction: direction)
        var offset = 0
        var sizeIndex = 0
        var state = TLSScanState.needMoreData
        while offset < bytes.count {
            let size = sizeIndex < sizes.count ? max(1, sizes[sizeIndex]) : bytes.count - offset
            sizeIndex += 1
            let end = min(bytes.count, offset + size)
            state = scanner.feed(bytes[offset..<end])
            offset = end
            if state != .needMoreData { break }
        }
        return state
    }

    /// Feeds one byte at a time.
    static func byteAtATime(_ bytes: [UInt8], _ direction: TLSHelloScanner.Direction) -> TLSScanState {
        chunked(bytes, direction, sizes: Array(repeating: 1, count: bytes.count))
    }

    /// The chunk sizes a seeded generator picks, 1...maximum each, covering `count` bytes.
    static func randomSizes(covering count: Int, maximum: Int, using generator: inout SplitMix64) -> [Int] {
        var sizes: [Int] = []
        var covered = 0
        while covered < count {
            let size = Int.random(in: 1...maximum, using: &generator)
            sizes.append(size)
            covered += size
        }
        return sizes
    }
}

/// Builds TLS wire bytes for hand-made cases.
enum Wire {
    static func uint16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }

    static func uint16s(_ values: [UInt16]) -> [UInt8] { values.flatMap(uint16) }

    /// A vector with a length prefix of `lengthBytes` bytes (RFC 8446 §3.4).
    static func vector(_ lengthBytes: Int, _ contents: [UInt8]) -> [UInt8] {
        lengthPrefix(contents.count, lengthBytes) + contents
    }

    static func lengthPrefix(_ length: Int, _ lengthBytes: Int) -> [UInt8] {
        (0..<lengthBytes).reversed().map { UInt8(truncatingIfNeeded: length >> (8 * $0)) }
    }

    static func record(type: UInt8 = 22, version: UInt16 = 0x0303, _ body: [UInt8]) -> [UInt8] {
        [type] + uint16(version) + vector(2, body)
    }

    static func handshake(type: UInt8, _ body: [UInt8]) -> [UInt8] {
        [type] + vector(3, body)
    }

    static func ext(_ type: UInt16, _ data: [UInt8]) -> [UInt8] {
        uint16(type) + vector(2, data)
    }

    static func sniExtension(_ host: String) -> [UInt8] {
        ext(0, vector(2, [0] + vector(2, Array(host.utf8))))
    }

    static func alpnExtension(_ names: [String]) -> [UInt8] {
        ext(16, vector(2, names.flatMap { vector(1, Array($0.utf8)) }))
    }

    /// Splits `bytes` into handshake records at the given offsets.
    static func records(splitting bytes: [UInt8], at offsets: [Int], version: UInt16 = 0x0303) -> [UInt8] {
        let bounds = [0] + offsets + [bytes.count]
        return zip(bounds, bounds.dropFirst()).flatMap { record(version: version, Array(bytes[$0..<$1])) }
    }
}

/// A ClientHello body whose every field can be set, including to nonsense.
struct ClientHelloBuilder {
    var legacyVersion: UInt16 = 0x0303
    var random = [UInt8](repeating: 0x5A, count: 32)
    var sessionID = [UInt8](repeating: 0xAB, count: 32)
    var cipherSuites: [UInt16] = [0x1301, 0x1302, 0xC02F]
    var compressionMethods: [UInt8] = [0]
    /// Each extension's full bytes (type, length, data); nil leaves the block out.
    var extensions: [[UInt8]]? = [
        Wire.sniExtension("www.example.com"),
        Wire.ext(43, Wire.vector(1, Wire.uint16s([0x0304, 0x0303]))),
    ]

    var body: [UInt8] {
        var bytes = Wire.uint16(legacyVersion) + random + Wire.vector(1, sessionID)
        bytes += Wire.vector(2, Wire.uint16s(cipherSuites)) + Wire.vector(1, compressionMethods)
        if let extensions { bytes += Wire.vector(2, extensions.flatMap { $0 }) }
        return bytes
    }

    var message: [UInt8] { Wire.handshake(type: 1, body) }
    var record: [UInt8] { Wire.record(version: 0x0301, message) }
}

/// A ServerHello body whose every field can be set.
struct ServerHelloBuilder {
    static let helloRetryRequestRandom: [UInt8] = [
        0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
        0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C,
    ]

    var legacyVersion: UInt16 = 0x0303
    var random = [UInt8](repeating: 0x11, count: 32)
    var sessionID = [UInt8](repeating: 0xAB, count: 32)
    var cipherSuite: UInt16 = 0x1301
    var compressionMethod: UInt8 = 0
    var extensions: [[UInt8]]? = [Wire.ext(43, Wire.uint16(0x0304))]

    static var helloRetryRequest: ServerHelloBuilder {
        var builder = ServerHelloBuilder()
        builder.random = helloRetryRequestRandom
        return builder
    }

    var body: [UInt8] {
        var bytes = Wire.uint16(legacyVersion) + random + Wire.vector(1, sessionID)
        bytes += Wire.uint16(cipherSuite) + [compressionMethod]
        if let extensions { bytes += Wire.vector(2, extensions.flatMap { $0 }) }
        return bytes
    }

    var message: [UInt8] { Wire.handshake(type: 2, body) }
    var record: [UInt8] { Wire.record(message) }
}

extension TLSScanState {
    var clientHello: ClientHello? {
        if case .clientHello(let hello) = self { hello } else { nil }
    }

    var serverHello: ServerHello? {
        if case .serverHello(let hello) = self { hello } else { nil }
    }

    var failureReason: String? {
        if case .failed(let reason) = self { reason } else { nil }
    }

    var notTLSReason: String? {
        if case .notTLS(let reason) = self { reason } else { nil }
    }
}

@Suite("TLS test support")
struct TLSTestSupportTests {
    @Test("every capture file named in TLSCaptures exists and starts with a TLS record")
    func capturesExist() throws {
        for name in TLSCaptures.allNames {
            let bytes = try TLSCaptures.bytes(name)
            try #require(bytes.count >= 5, "\(name) is too short")
            #expect([21, 22].contains(bytes[0]), "\(name) does not start with a handshake or alert record")
        }
    }

    @Test("the seeded generator repeats")
    func seededGeneratorRepeats() {
        var first = SplitMix64(seed: 42)
        var second = SplitMix64(seed: 42)
        #expect((0..<8).map { _ in first.next() } == (0..<8).map { _ in second.next() })
    }

    @Test("the builders' default hellos scan as expected")
    func buildersProduceValidHellos() {
        #expect(Scan.whole(ClientHelloBuilder().record, .clientToServer).clientHello?.serverName == "www.example.com")
        #expect(Scan.whole(ServerHelloBuilder().record, .serverToClient).serverHello?.selectedVersion == 0x0304)
    }
}
