/// An `http` CA Issuers URL (RFC 5280 §4.2.2.1), from a certificate's Authority Information Access,
/// as iOS fetches a missing intermediate from it: only `http` (no TLS, whose trust would need the
/// very intermediate being fetched), a host and port, and a path.
package struct CAIssuersURL: Sendable, Hashable, CustomStringConvertible {
    /// The URL as the certificate wrote it.
    package let text: String
    /// The host, without brackets for an IPv6 literal.
    package let host: String
    package let port: UInt16
    /// The path and query, `/` when the URL has none.
    package let path: String

    /// Nil unless `text` is an `http://` URL with a host, an optional port and printable ASCII only.
    package init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count <= 2048, bytes.allSatisfy({ (0x21...0x7E).contains($0) }) else { return nil }
        guard text.lowercased().hasPrefix("http://") else { return nil }
        let rest = text.dropFirst(7)
        let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        let authority = rest[..<slash]
        guard !authority.contains("@") else { return nil }
        var host = Substring(authority)
        var port: UInt16 = 80
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let number = UInt16(after.dropFirst()), number > 0 else { return nil }
                port = number
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            guard let number = UInt16(authority[authority.index(after: colon)...]), number > 0 else { return nil }
            port = number
        }
        guard !host.isEmpty else { return nil }
        self.text = text
        self.host = String(host).lowercased()
        self.port = port
        let target = rest[slash...]
        path = target.isEmpty ? "/" : (target.hasPrefix("?") ? "/" + target : String(target))
    }

    package var description: String { text }

    /// The request: HTTP/1.0, so that no server answers in chunks, and the connection closes after it.
    package var request: [UInt8] {
        let authority = host.contains(":") ? "[\(host)]" : host
        let hostField = port == 80 ? authority : "\(authority):\(port)"
        return Array(
            "GET \(path) HTTP/1.0\r\nHost: \(hostField)\r\nAccept: */*\r\nUser-Agent: atsproxy (CA Issuers)\r\n\r\n"
                .utf8)
    }
}

/// Reads the answer to a ``CAIssuersURL`` request, bounded: the body of a `200` answer, at most
/// ``maximumBody`` bytes, framed by Content-Length or by the server's close.
package struct CAIssuersResponseReader: Sendable {
    /// An intermediate is one or two KiB; a PKCS #7 bundle of a few certificates fits many times over.
    package static let maximumBody = 64 * 1024

    package enum State: Sendable, Equatable {
        /// More bytes are needed (or the close, for a body that runs until it).
        case needMoreData
        /// The whole body.
        case complete([UInt8])
        /// Why the answer is no certificate, in words.
        case failed(String)
    }

    private var parser = ResponseHeadParser()
    private var length: UInt64?
    private var headRead = false
    private var body: [UInt8] = []
    package private(set) var state = State.needMoreData

    package init() {}

    /// Takes the next bytes the server sent.
    package mutating func consume(_ bytes: [UInt8]) -> State {
        guard case .needMoreData = state else { return state }
        var incoming = bytes
        if !headRead {
            switch parser.consume(bytes) {
            case .needMoreData: return state
            case .failed(let error):
                state = .failed("the answer is not HTTP: \(error)")
                return state
            case .complete(let head, let leftover):
                headRead = true
                guard head.status == 200 else {
                    state = .failed("the server answered \(head.status) \(head.reason)")
                    return state
                }
                do {
                    switch try head.bodyFraming(requestMethod: "GET") {
                    case .contentLength(let count): length = count
                    case .none: length = 0
                    case .untilClose: length = nil
                    case .chunked:
                        state = .failed("the server answered in chunks to an HTTP/1.0 request")
                        return state
                    }
                } catch {
                    state = .failed("the answer's framing is invalid: \(error)")
                    return state
                }
                if let length, length > UInt64(Self.maximumBody) {
                    state = .failed("the answer is \(length) bytes; at most \(Self.maximumBody) are read")
                    return state
                }
                incoming = leftover
            }
        }
        body += incoming
        if body.count > Self.maximumBody {
            state = .failed("the answer is over \(Self.maximumBody) bytes")
        } else if let length, body.count >= Int(length) {
            state = .complete(Array(body.prefix(Int(length))))
        }
        return state
    }

    /// The server closed the connection: the body is complete if it ran until the close.
    package mutating func end() -> State {
        guard case .needMoreData = state else { return state }
        if headRead, length == nil {
            state = .complete(body)
        } else if headRead {
            state = .failed("the connection closed after \(body.count) of \(length ?? 0) bytes")
        } else {
            state = .failed("the connection closed before a whole answer")
        }
        return state
    }
}
