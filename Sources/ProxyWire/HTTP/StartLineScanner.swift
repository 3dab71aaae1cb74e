/// Reads the first line of a message head one byte at a time, so that a malformed line fails at
/// its first bad byte rather than when the line (or the head size limit) ends.
protocol StartLineScanner: Sendable {
    associatedtype StartLine: Sendable

    static var kind: HTTPMessageKind { get }

    init()

    /// True until the line's first byte; an empty line before the start line is skipped.
    var isEmpty: Bool { get }

    /// Takes one byte of the line, never CR or LF. Returns an error once the line cannot be valid.
    mutating func accept(_ byte: UInt8) -> HeadError?

    /// The bytes that `accept` would, at this point of the line, only check and store; nil where
    /// each byte needs a decision (a version, a status code, a separator).
    var plainBytes: HTTPPlainBytes? { get }

    /// Stores a run of `plainBytes` bytes, as `accept` would one at a time.
    mutating func storePlainRun(_ run: some Collection<UInt8>)

    /// The line ended: the parsed line, or why it is invalid.
    func finish() -> Result<StartLine, HeadError>
}

/// Checks the `HTTP/1.x` part of a start line (RFC 9112 §2.3) as its bytes arrive.
///
/// Only the two digits are stored: every other byte of a version is fixed, so a count of the
/// bytes accepted says all the rest, and the scanner needs no buffer.
struct HTTPVersionScanner: Sendable {
    static let length = 8
    private static let prefix = Array("HTTP/".utf8)

    /// Bytes accepted so far, 0 to `length`.
    private(set) var count = 0
    private var majorDigit = UInt8(ascii: "0")
    private var minorDigit = UInt8(ascii: "0")

    var isEmpty: Bool { count == 0 }
    var isComplete: Bool { count == HTTPVersionScanner.length }

    enum Step {
        case accepted
        /// Not the syntax of an HTTP version at all.
        case malformed
        /// Well-formed so far, but not 1.0 or 1.1.
        case unsupported
    }

    /// Versions are case-sensitive (RFC 9112 §2.3), so "http/1.1" is malformed. Any major version
    /// other than 1 is refused at its digit; any minor other than 0 or 1 too, as the proxy speaks
    /// only HTTP/1.0 and HTTP/1.1.
    mutating func accept(_ byte: UInt8) -> Step {
        let position = count
        switch position {
        case 0..<5:
            guard byte == HTTPVersionScanner.prefix[position] else { return .malformed }
        case 5:
            guard HTTPSyntax.isDigit(byte) else { return .malformed }
            majorDigit = byte
            count += 1
            return byte == UInt8(ascii: "1") ? .accepted : .unsupported
        case 6:
            guard byte == UInt8(ascii: ".") else { return .malformed }
        case 7:
            guard HTTPSyntax.isDigit(byte) else { return .malformed }
            minorDigit = byte
            count += 1
            return byte == UInt8(ascii: "0") || byte == UInt8(ascii: "1") ? .accepted : .unsupported
        default:
            return .malformed
        }
        count += 1
        return .accepted
    }

    /// The version once all eight bytes arrived.
    var version: HTTPVersion? {
        guard isComplete else { return nil }
        return HTTPVersion(major: Int(majorDigit - UInt8(ascii: "0")), minor: Int(minorDigit - UInt8(ascii: "0")))
    }

    /// The version text seen so far, for error reasons.
    var text: String {
        let full = HTTPVersionScanner.prefix + [majorDigit, UInt8(ascii: "."), minorDigit]
        return String(decoding: full.prefix(count), as: UTF8.self)
    }
}
