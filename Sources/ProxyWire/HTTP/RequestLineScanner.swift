/// The parts of a request line before the target is interpreted.
struct RequestLine: Sendable, Equatable {
    var method: String
    var target: ArraySlice<UInt8>
    var version: HTTPVersion
}

/// request-line = method SP request-target SP HTTP-version (RFC 9112 §3).
///
/// Exactly one SP separates the parts: §3 allows a recipient to split on any whitespace, but a
/// lenient split is how request smuggling and filter bypasses start, so the proxy refuses it.
struct RequestLineScanner: StartLineScanner {
    static let kind = HTTPMessageKind.request

    private enum Part { case method, target, version }

    private var part = Part.method
    /// The method's bytes, then the target's: one buffer, as each array costs an allocation.
    private var bytes: [UInt8] = []
    /// Where the method ends in `bytes` (and the target starts) once the first SP arrived.
    private var methodLength = 0
    private var version = HTTPVersionScanner()

    var isEmpty: Bool { part == .method && bytes.isEmpty }

    var plainBytes: HTTPPlainBytes? {
        switch part {
        case .method: .token
        case .target: .visible
        case .version: nil
        }
    }

    mutating func storePlainRun(_ run: some Collection<UInt8>) {
        if bytes.isEmpty { bytes.reserveCapacity(HTTPSyntax.lineBufferCapacity) }
        bytes.append(contentsOf: run)
    }

    mutating func accept(_ byte: UInt8) -> HeadError? {
        switch part {
        case .method:
            return acceptMethodByte(byte)
        case .target:
            if byte == HTTPSyntax.space {
                guard bytes.count > methodLength else {
                    return .malformed(.request, "the request line has two spaces after the method")
                }
                part = .version
                return nil
            }
            // Any visible ASCII: which characters a URL may hold is judged when the line ends.
            guard HTTPSyntax.isVisible(byte) else {
                return .malformed(.request, "the request target contains the invalid byte \(HTTPSyntax.describe(byte))")
            }
            bytes.append(byte)
            return nil
        case .version:
            switch version.accept(byte) {
            case .accepted:
                return nil
            case .malformed where version.isComplete:
                return .malformed(.request, "the request line has characters after \(version.text)")
            case .malformed:
                return .malformed(.request, "the request line does not end with an HTTP version such as HTTP/1.1")
            case .unsupported:
                return .unsupportedVersion(.request, Self.unsupportedVersionReason(version.text))
            }
        }
    }

    /// The longest method taken: the longest registered one (`UPDATEREDIRECTREF`, 17) with room to
    /// spare. RFC 9112 §3: "A server that receives a method longer than any that it implements
    /// SHOULD respond with a 501 (Not Implemented) status code."
    static let maximumMethodLength = 32

    private mutating func acceptMethodByte(_ byte: UInt8) -> HeadError? {
        if HTTPSyntax.isTokenCharacter(byte) {
            bytes.append(byte)
            return bytes.count > Self.maximumMethodLength ? Self.methodTooLong : nil
        }
        if byte == HTTPSyntax.space, !bytes.isEmpty {
            // A run of token bytes may have been stored whole: its length is checked here.
            if bytes.count > Self.maximumMethodLength { return Self.methodTooLong }
            methodLength = bytes.count
            part = .target
            return nil
        }
        guard bytes.isEmpty else {
            return .malformed(.request, "the method contains the invalid byte \(HTTPSyntax.describe(byte))")
        }
        return .malformed(.request, Self.notHTTPReason(firstByte: byte))
    }

    func finish() -> Result<RequestLine, HeadError> {
        switch part {
        case .method:
            return .failure(.malformed(.request, "the request line has no request target"))
        case .target:
            return .failure(.malformed(.request, "the request line has no HTTP version (HTTP/0.9 is not supported)"))
        case .version:
            guard let parsed = version.version else {
                return .failure(
                    .malformed(.request, "the request line does not end with an HTTP version such as HTTP/1.1"))
            }
            let method = String(decoding: bytes[..<methodLength], as: UTF8.self)
            return .success(RequestLine(method: method, target: bytes[methodLength...], version: parsed))
        }
    }

    static let methodTooLong = HeadError.notImplemented(
        .request, "the method is longer than \(maximumMethodLength) characters, longer than any method there is")

    /// The first byte of a request cannot start a method: say what the client most likely sent.
    static func notHTTPReason(firstByte byte: UInt8) -> String {
        switch byte {
        case 0x16:
            // A TLS record of type handshake (RFC 8446 §5.1): a client that was told to use
            // this proxy for https but opened TLS instead of sending CONNECT.
            "this is not an HTTP request but a TLS handshake: use this proxy as an HTTP proxy (https goes through CONNECT), not as a TLS endpoint"
        case HTTPSyntax.space, HTTPSyntax.horizontalTab:
            "the request line starts with whitespace"
        default:
            "this is not an HTTP request: it starts with the byte \(HTTPSyntax.describe(byte)) where a method such as GET was expected"
        }
    }

    static func unsupportedVersionReason(_ versionText: String) -> String {
        if versionText.hasPrefix("HTTP/2") {
            return
                "HTTP/2 is not supported: this proxy speaks HTTP/1.1 (a client sending the HTTP/2 preface must use HTTP/1.1 here)"
        }
        return "\(versionText) is not supported: this proxy speaks HTTP/1.0 and HTTP/1.1"
    }
}
