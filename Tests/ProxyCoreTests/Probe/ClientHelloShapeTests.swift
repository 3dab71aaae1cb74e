import ATSPolicy
import ProxyCore
import ProxyWire
import TLSInspection
import TLSTestSupport
import Testing

/// The ATS client's ClientHello as it goes over the wire, per OS profile: iOS 26's is large enough to
/// span two TCP segments, as an iOS 26 device's is; every other profile's is what it always was.
@Suite("The ATS client's ClientHello by OS profile")
struct ClientHelloShapeTests {
    /// The ClientHello record the ATS client for `os` sends to a host ATS applies to, and its context.
    static func hello(_ os: OSProfile, serverName: String? = "localhost") throws -> (
        record: [UInt8], context: TLSClientContext
    ) {
        let policy = try PolicyLoader.load(
            bytes: Array("<plist version=\"1.0\"><dict/></plist>".utf8), file: "t.plist",
            settings: PolicySettings(osProfile: os))
        let requirements = try policy.requirements(forHost: "www.example.com")
        let service = ProbeService(anchors: try TrustAnchors.loading(caFiles: [], systemRoots: false))
        // The context the probes use for this client: its hello is the probe's.
        let context = try service.context(for: .ats(for: requirements))
        let recorder = try HelloRecorder()
        _ = try ProbeLoop(service: service, limits: ProbeLimits()).handshake(
            host: "127.0.0.1", port: recorder.port, serverName: serverName, profile: .ats(for: requirements))
        return (try #require(recorder.records.first), context)
    }

    static func parsed(_ record: [UInt8]) throws -> ClientHello {
        var scanner = TLSHelloScanner(direction: .clientToServer)
        guard case .clientHello(let hello) = scanner.feed(record) else {
            Issue.record("not a whole ClientHello: \(scanner.state)")
            throw ScanFailure()
        }
        return hello
    }

    struct ScanFailure: Error {}

    /// TCP segments of `mss` payload bytes that `bytes` need.
    static func segments(_ bytes: Int, mss: Int = OneSegmentHelloServer.segment) -> Int { (bytes + mss - 1) / mss }

    @Test("iOS 26's hello is at least 1.5 KB and needs two 1,460-byte segments, with or without a server name")
    func ios26HelloSize() throws {
        for serverName in ["localhost", nil] as [String?] {
            let (record, context) = try Self.hello(.ios26, serverName: serverName)
            #expect(record.count - 5 >= 1_536, "the hello is \(record.count - 5) bytes")
            #expect(Self.segments(record.count) == 2, "the record is \(record.count) bytes")
            let fitsOneRead = OneSegmentHelloServer.holdsWholeHello(Array(record.prefix(OneSegmentHelloServer.segment)))
            #expect(!fitsOneRead)
            let hello = try Self.parsed(record)
            if context.offersPostQuantum {
                // OpenSSL 3.5 and later: the real X25519MLKEM768 offer, first, with its key share.
                #expect(hello.supportedGroups.first == KeyExchangeGroup.x25519MLKEM768.codepoint)
                #expect(!hello.extensionTypes.contains(0x3A3A))
            } else {
                // OpenSSL without ML-KEM (Debian 12's 3.0): the same size from the GREASE padding.
                #expect(context.helloPadding == 1_350)
                #expect(hello.extensionTypes.filter { $0 == 0x3A3A }.count == 1)
                #expect(hello.supportedGroups == [0x001D, 0x0017, 0x0018, 0x0019])
            }
        }
    }

    /// Each profile's hello as it was before iOS 26's was made large, in bytes on the wire (record
    /// header included) for the server name `localhost`: OpenSSL's own hello, one segment. The iOS 9
    /// client stops at TLS 1.2, so it sends no TLS 1.3 suites, key share or supported_versions.
    @Test(
        "other profiles' hellos are unchanged: OpenSSL's own, one segment",
        arguments: [(OSProfile.ios9, 163), (.ios10, 258), (.ios17, 258)])
    func otherProfilesUnchanged(_ os: OSProfile, _ expected: Int) throws {
        let (record, context) = try Self.hello(os)
        #expect(record.count == expected)
        #expect(Self.segments(record.count) == 1)
        #expect(!context.offersPostQuantum)
        #expect(context.helloPadding == 0)
        #expect(try !Self.parsed(record).extensionTypes.contains(0x3A3A))
    }
}
