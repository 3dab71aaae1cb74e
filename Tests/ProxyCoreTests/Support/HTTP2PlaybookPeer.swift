import HTTP2

/// An HTTP/2 endpoint over a ``MemoryTLSPeer``: a device (client) or an origin (server) for the
/// relay's scripted tests. It records what its peer did, stream by stream, and takes the bytes it
/// receives at once unless told to hold them (a reader that leaves its window shut).
final class HTTP2PlaybookPeer: HTTP2SessionDelegate {
    let tls: MemoryTLSPeer
    private(set) var session: HTTP2Session!
    /// Header lists received, per stream, in order (a response's 1xx, final and trailers).
    private(set) var headers: [Int32: [[HTTP2Field]]] = [:]
    private(set) var bodies: [Int32: [UInt8]] = [:]
    private(set) var ended: Set<Int32> = []
    private(set) var closed: [Int32: HTTP2ErrorCode] = [:]
    private(set) var goAways: [HTTP2ErrorCode] = []
    /// Streams the peer opened (requests, for an origin), in order.
    private(set) var opened: [Int32] = []
    /// Whether body bytes are consumed as they come (opening the sender's window again).
    var consumes = true
    /// The error the session's last bytes broke it with, if they did.
    private(set) var failure: HTTP2Error?

    init(_ tls: MemoryTLSPeer, role: HTTP2Session.Role, settings: HTTP2Settings = HTTP2Settings()) throws {
        self.tls = tls
        session = try HTTP2Session(role: role, settings: settings, delegate: self)
        tls.application = { [unowned self] peer in pump(peer) }
    }

    private func pump(_ peer: MemoryTLSPeer) -> Bool {
        let input = peer.takeBytes()
        let result = input.withUnsafeBytes { bytes in
            Result { () throws(HTTP2Error) in try session.receive(bytes) }
        }
        if case .failure(let error) = result { failure = error }
        var output: [UInt8] = []
        try? session.drainOutput { output.append(contentsOf: $0) }
        if !output.isEmpty { peer.send(output) }
        return !input.isEmpty || !output.isEmpty
    }

    /// A request with `fields` (the pseudo-headers first); with `body`, sent and ended.
    @discardableResult
    func request(_ fields: [(String, String)], body: [UInt8]? = nil) throws -> Int32 {
        let stream = try session.submitRequest(fields.map { HTTP2Field($0.0, $0.1) }, hasBody: body != nil)
        if let body {
            body.withUnsafeBytes { session.send($0, on: stream) }
            session.finish(stream)
        }
        return stream
    }

    /// Answers `stream` with `status`, `body`, and trailers when given.
    func respond(
        _ stream: Int32, status: Int, fields: [(String, String)] = [], body: [UInt8] = [],
        trailers: [(String, String)] = []
    ) throws {
        let head = [HTTP2Field(":status", "\(status)")] + fields.map { HTTP2Field($0.0, $0.1) }
        let hasBody = !body.isEmpty || !trailers.isEmpty
        try session.submitResponse(head, on: stream, hasBody: hasBody)
        guard hasBody else { return }
        body.withUnsafeBytes { session.send($0, on: stream) }
        session.finish(stream, trailers: trailers.map { HTTP2Field($0.0, $0.1) })
    }

    /// The value of `name` in the first header list of `stream`.
    func value(_ name: String, on stream: Int32) -> String? {
        headers[stream]?.first?.first { $0.nameText == name }?.valueText
    }

    func session(
        _ session: HTTP2Session, headers: [HTTP2Field], kind: HTTP2HeadersKind, on stream: Int32, endsStream: Bool
    ) {
        if kind == .request { opened.append(stream) }
        self.headers[stream, default: []].append(headers)
        if endsStream { ended.insert(stream) }
    }

    func session(_ session: HTTP2Session, data: UnsafeRawBufferPointer, on stream: Int32) {
        bodies[stream, default: []].append(contentsOf: data)
        if consumes { session.consumed(data.count, on: stream) }
    }

    func session(_ session: HTTP2Session, endedDataOn stream: Int32) { ended.insert(stream) }

    func session(_ session: HTTP2Session, closed stream: Int32, code: HTTP2ErrorCode, reason: HTTP2StreamReset?) {
        closed[stream] = code
    }

    func session(_ session: HTTP2Session, dataTaken count: Int, on stream: Int32) {}

    func session(_ session: HTTP2Session, goAway lastStream: Int32, code: HTTP2ErrorCode, debug: [UInt8]) {
        goAways.append(code)
    }

    func sessionReceivedSettings(_ session: HTTP2Session) {}
}
