/// The parts of a status line.
struct StatusLine: Sendable, Equatable {
    var version: HTTPVersion
    var status: Int
    var reason: String
}

/// status-line = HTTP-version SP status-code SP [ reason-phrase ] (RFC 9112 §4).
///
/// A line that ends right after the three digits, with no SP, is accepted with an empty reason:
/// the grammar requires the SP, but servers that omit it are common and the reason phrase
/// carries no meaning (§4: "A client SHOULD ignore the reason-phrase content").
struct StatusLineScanner: StartLineScanner {
    static let kind = HTTPMessageKind.response

    private enum Part { case version, status, reason }

    private var part = Part.version
    private var version = HTTPVersionScanner()
    private var statusDigits: [UInt8] = []
    private var reason: [UInt8] = []

    var isEmpty: Bool { part == .version && version.isEmpty }

    var plainBytes: HTTPPlainBytes? { part == .reason ? .fieldValue : nil }

    mutating func storePlainRun(_ run: some Collection<UInt8>) {
        reason.append(contentsOf: run)
    }

    mutating func accept(_ byte: UInt8) -> HeadError? {
        switch part {
        case .version:
            if version.isComplete {
                guard byte == HTTPSyntax.space else {
                    return .malformed(.response, "the status line has no space after \(version.text)")
                }
                part = .status
                return nil
            }
            let wasEmpty = version.isEmpty
            switch version.accept(byte) {
            case .accepted:
                return nil
            case .malformed where wasEmpty:
                return .malformed(.response, Self.notHTTPReason(firstByte: byte))
            case .malformed:
                return .malformed(.response, "the response does not start with an HTTP version such as HTTP/1.1")
            case .unsupported:
                return .unsupportedVersion(
                    .response, "the server answered with \(version.text), which this proxy does not speak")
            }
        case .status:
            if statusDigits.count == 3 {
                guard byte == HTTPSyntax.space else {
                    return .malformed(.response, "the status code is not three digits followed by a space")
                }
                part = .reason
                return nil
            }
            // status-code = 3DIGIT, and 100–999 leaves out a leading zero (RFC 9110 §15).
            guard HTTPSyntax.isDigit(byte), !(statusDigits.isEmpty && byte == UInt8(ascii: "0")) else {
                return .malformed(.response, "the status code is not three digits from 100 to 999")
            }
            statusDigits.append(byte)
            return nil
        case .reason:
            // reason-phrase = 1*( HTAB / SP / VCHAR / obs-text )
            guard HTTPSyntax.isFieldValueCharacter(byte) else {
                return .malformed(.response, "the reason phrase contains the control byte \(HTTPSyntax.describe(byte))")
            }
            reason.append(byte)
            return nil
        }
    }

    func finish() -> Result<StatusLine, HeadError> {
        guard let parsed = version.version, statusDigits.count == 3 else {
            return .failure(
                .malformed(
                    .response, "the status line is incomplete: it needs an HTTP version and a three-digit status"))
        }
        let status = statusDigits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        return .success(StatusLine(version: parsed, status: status, reason: String(decoding: reason, as: UTF8.self)))
    }

    static func notHTTPReason(firstByte byte: UInt8) -> String {
        switch byte {
        case 0x15, 0x16:
            // TLS alert or handshake records (RFC 8446 §5.1): a TLS server reached over plain HTTP.
            "the server did not answer with HTTP but with TLS (is this an https port?)"
        default:
            "the server did not answer with HTTP: the response starts with the byte \(HTTPSyntax.describe(byte))"
        }
    }
}
