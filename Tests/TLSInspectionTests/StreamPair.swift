import ATSPolicy
import Foundation
import TLSInspection
import TLSTestSupport
import Testing

/// The certificates the in-memory stream tests use, made once with openssl and then held in
/// memory (the scratch directory goes away with the factory).
struct StreamFixture: Sendable {
    let root: X509Certificate
    /// Leaves for example.com under `root`: ECDSA P-256 and RSA-2048.
    let ecdsaLeaf: ServerCredentials
    let rsaLeaf: ServerCredentials
    /// Another host's leaf (CN=other), for per-stream certificates.
    let otherLeaf: ServerCredentials
    /// `root` as the one user-installed anchor.
    var anchors: TrustAnchors { TrustAnchors(systemRoots: false, userInstalled: [root]) }

    /// Made on first use; an error is every test's error.
    static let shared = Result { try StreamFixture() }

    private init() throws {
        let factory = try CertificateFactory()
        try factory.rootCA("root", key: "ec:P-256")
        try factory.certificate("ecdsa", issuer: "root", key: "ec:P-256", subject: "/CN=example.com")
        try factory.certificate("rsa", issuer: "root", key: "rsa:2048", subject: "/CN=example.com")
        try factory.certificate(
            "other", issuer: "root", key: "ec:P-256", subject: "/CN=other",
            extensions: ["subjectAltName=DNS:other.example", "extendedKeyUsage=serverAuth"])
        func credentials(_ name: String) throws -> ServerCredentials {
            try ServerCredentials.loading(chainFile: factory.path("\(name).pem"), keyFile: factory.path("\(name).key"))
        }
        root = try X509Certificate.certificates(pem: factory.pem("root"))[0]
        ecdsaLeaf = try credentials("ecdsa")
        rsaLeaf = try credentials("rsa")
        otherLeaf = try credentials("other")
    }

    /// The client an ATS app would be for example.com (full ATS), narrowed by `adjust`.
    func clientContext(_ adjust: (inout ClientProfile) -> Void = { _ in }) throws -> TLSClientContext {
        let requirements = try PolicyLoader.load(
            bytes: Array("<plist version=\"1.0\"><dict/></plist>".utf8), file: "t.plist"
        )
        .requirements(forHost: "example.com")
        var profile = ClientProfile.ats(for: requirements)
        adjust(&profile)
        return try TLSClientContext(profile: profile, anchors: anchors)
    }
}

/// A client stream and a server stream over one ``LinkedTransports``, driven by the test.
struct StreamPair {
    let client: TLSStream
    let server: TLSStream
    let wire = LinkedTransports()

    init(
        client clientContext: TLSClientContext, server serverContext: TLSServerContext,
        serverName: String? = "example.com", credentials: ServerCredentials? = nil
    ) throws {
        client = try TLSStream(role: .client(serverName: serverName), context: clientContext, transport: wire.client)
        server = try TLSStream(role: .server(credentials: credentials), context: serverContext, transport: wire.server)
    }

    /// How one side's handshake ended.
    enum Ending: Equatable {
        case complete
        case failed(TLSStreamError)
        /// Still waiting for bytes that will not come.
        case stalled
    }

    /// Steps both handshakes in turn, client first, until neither can move: each side then has
    /// completed, failed, or waits for bytes its peer will not send. Nothing is left unflushed
    /// after any step.
    func handshake() -> (client: Ending, server: Ending) {
        var endings: [Ending?] = [nil, nil]
        for _ in 0..<20 {
            let sentBefore = wire.client.sent.count + wire.server.sent.count
            let endedBefore = endings.compactMap { $0 }.count
            for (index, stream) in [client, server].enumerated() where endings[index] == nil {
                do {
                    if try stream.handshake() == .complete { endings[index] = .complete }
                } catch {
                    endings[index] = .failed(error)
                }
                if !wire.client.queued.isEmpty || !wire.server.queued.isEmpty {
                    Issue.record("a handshake step left bytes unflushed (\(index == 0 ? "client" : "server"))")
                }
            }
            let moved =
                wire.client.sent.count + wire.server.sent.count != sentBefore
                || endings.compactMap { $0 }.count != endedBefore
            if !moved { break }
        }
        return (endings[0] ?? .stalled, endings[1] ?? .stalled)
    }
}

extension TLSStream {
    /// Reads until the stream needs bytes or the session ends, `bufferSize` bytes at a time.
    func readAvailable(bufferSize: Int = 16_384) throws -> (bytes: [UInt8], last: PlaintextRead) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: bufferSize)
        while true {
            let read = try buffer.withUnsafeMutableBytes { try self.read(into: $0) }
            guard case .bytes(let count) = read else { return (received, read) }
            precondition(count <= bufferSize)
            received += buffer[..<count]
        }
    }

    func write(_ bytes: [UInt8]) throws { try bytes.withUnsafeBytes { try write($0) } }
}
