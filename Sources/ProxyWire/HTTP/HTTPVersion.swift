/// An HTTP version from a start line: `HTTP/<major>.<minor>`, one digit each (RFC 9112 §2.3).
package struct HTTPVersion: Sendable, Hashable, CustomStringConvertible {
    package var major: Int
    package var minor: Int

    package init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    package static let http10 = HTTPVersion(major: 1, minor: 0)
    package static let http11 = HTTPVersion(major: 1, minor: 1)

    /// "HTTP/1.1"
    package var description: String { "HTTP/\(major).\(minor)" }

    /// "1.1": the received-protocol of a Via field value (RFC 9110 §7.6.3 omits the name "HTTP").
    var viaProtocol: String { "\(major).\(minor)" }
}
