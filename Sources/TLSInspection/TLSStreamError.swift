/// Why a ``TLSStream`` failed, with OpenSSL's words drained from its queue at the point of failure.
package struct TLSStreamError: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Kind: Sendable, Equatable {
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

    /// What OpenSSL said the failure was, where it names something a log should tell apart.
    package enum Cause: Sendable, Equatable {
        /// The peer sent a fatal alert with this description (RFC 8446 §6: 48 unknown_ca, …).
        case peerAlert(UInt8)
        /// No protocol version both sides speak (a TLS 1.0-only client against TLS 1.2-1.3).
        case noSharedVersion
        /// No cipher suite, or no key-exchange group, both sides accept.
        case noSharedCipher
        /// Nothing more precise.
        case other
    }

    package var kind: Kind
    package var cause: Cause = .other
    package var reason: String

    package init(kind: Kind, reason: String, cause: Cause = .other) {
        self.kind = kind
        self.reason = reason
        self.cause = cause
    }

    package var description: String { reason }
}
