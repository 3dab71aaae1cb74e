/// Why a ``TLSStream`` failed, with OpenSSL's words drained from its queue at the point of failure.
public struct TLSStreamError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The handshake or a record was refused: an alert from the peer, no common version or
        /// suite, a bad record. Another client profile may succeed where this one failed.
        case refused
        /// The peer ended the connection without an alert (mid-handshake, or mid-session without
        /// close_notify).
        case peerClosed
        /// What came back is not TLS (an HTTP response, a banner).
        case notTLS
        /// A call out of order, or OpenSSL itself failing (memory).
        case internalError
    }

    public var kind: Kind
    public var reason: String

    public init(kind: Kind, reason: String) {
        self.kind = kind
        self.reason = reason
    }

    public var description: String { reason }
}
