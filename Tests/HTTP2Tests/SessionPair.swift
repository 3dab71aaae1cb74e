import HTTP2

/// What a session's delegate was told, in order.
enum Heard: Equatable {
    case headers([HTTP2Field], HTTP2HeadersKind, stream: Int32, endsStream: Bool)
    case data([UInt8], stream: Int32)
    case endedData(stream: Int32)
    case closed(stream: Int32, HTTP2ErrorCode, HTTP2StreamReset?)
    case goAway(lastStream: Int32, HTTP2ErrorCode)
    case settings
}

/// Records what its session tells it; `onHeaders` answers as a test's server would.
final class Recorder: HTTP2SessionDelegate {
    var heard: [Heard] = []
    var taken: [Int32: Int] = [:]
    var onHeaders: ((HTTP2Session, [HTTP2Field], Int32) -> Void)?

    func session(
        _ session: HTTP2Session, headers: [HTTP2Field], kind: HTTP2HeadersKind, on stream: Int32, endsStream: Bool
    ) {
        heard.append(.headers(headers, kind, stream: stream, endsStream: endsStream))
        onHeaders?(session, headers, stream)
    }
    func session(_ session: HTTP2Session, data: UnsafeRawBufferPointer, on stream: Int32) {
        heard.append(.data(Array(data), stream: stream))
    }
    func session(_ session: HTTP2Session, endedDataOn stream: Int32) { heard.append(.endedData(stream: stream)) }
    func session(_ session: HTTP2Session, closed stream: Int32, code: HTTP2ErrorCode, reason: HTTP2StreamReset?) {
        heard.append(.closed(stream: stream, code, reason))
    }
    func session(_ session: HTTP2Session, dataTaken count: Int, on stream: Int32) { taken[stream, default: 0] += count }
    func session(_ session: HTTP2Session, goAway lastStream: Int32, code: HTTP2ErrorCode, debug: [UInt8]) {
        heard.append(.goAway(lastStream: lastStream, code))
    }
    func sessionReceivedSettings(_ session: HTTP2Session) { heard.append(.settings) }

    /// The body bytes received on a stream, in order.
    func body(on stream: Int32) -> [UInt8] {
        heard.flatMap { heard -> [UInt8] in if case .data(let bytes, stream) = heard { bytes } else { [] } }
    }

    /// The requests (or responses) received: their header lists.
    var headerLists: [[HTTP2Field]] {
        heard.compactMap { if case .headers(let fields, _, _, _) = $0 { fields } else { nil } }
    }
}

/// A client and a server session joined in memory: real libnghttp2 at both ends, the bytes moved
/// by ``pump()`` until neither has anything to say.
final class SessionPair {
    let clientHeard = Recorder()
    let serverHeard = Recorder()
    let client: HTTP2Session
    let server: HTTP2Session
    /// Errors the server's session raised on the client's bytes (a protocol violation ends it).
    var serverErrors: [HTTP2Error] = []
    var clientErrors: [HTTP2Error] = []

    init(client clientSettings: HTTP2Settings = HTTP2Settings(), server serverSettings: HTTP2Settings = HTTP2Settings())
        throws
    {
        client = try HTTP2Session(role: .client, settings: clientSettings, delegate: clientHeard)
        server = try HTTP2Session(role: .server, settings: serverSettings, delegate: serverHeard)
    }

    /// Moves bytes both ways until both sessions are quiet.
    func pump() throws {
        var moved = true
        while moved {
            moved = false
            var toServer: [UInt8] = []
            try client.drainOutput { toServer += $0 }
            if !toServer.isEmpty {
                moved = true
                do { try toServer.withUnsafeBytes { try server.receive($0) } } catch {
                    serverErrors.append(error as! HTTP2Error)
                }
            }
            var toClient: [UInt8] = []
            try server.drainOutput { toClient += $0 }
            if !toClient.isEmpty {
                moved = true
                do { try toClient.withUnsafeBytes { try client.receive($0) } } catch {
                    clientErrors.append(error as! HTTP2Error)
                }
            }
        }
    }

    /// Feeds the server bytes as a client would have sent them (a hostile one, written by hand).
    /// Feeds the server bytes as a client would have sent them (a hostile one, written by hand), and
    /// returns what the server answered (what it decided is told as it is written out).
    @discardableResult
    func serverReceives(_ bytes: [UInt8]) throws -> [UInt8] {
        do { try bytes.withUnsafeBytes { try server.receive($0) } } catch { serverErrors.append(error as! HTTP2Error) }
        var answer: [UInt8] = []
        try server.drainOutput { answer += $0 }
        return answer
    }

    /// Moves what the client has to say to the server, and nothing back.
    func clientSends() throws {
        var bytes: [UInt8] = []
        try client.drainOutput { bytes += $0 }
        do { try bytes.withUnsafeBytes { try server.receive($0) } } catch { serverErrors.append(error as! HTTP2Error) }
    }
}

func request(_ path: String, method: String = "GET", extra: [HTTP2Field] = []) -> [HTTP2Field] {
    [
        HTTP2Field(":method", method), HTTP2Field(":scheme", "https"), HTTP2Field(":authority", "origin.test"),
        HTTP2Field(":path", path),
    ] + extra
}
