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

    package var kind: Kind
    package var reason: String

    package init(kind: Kind, reason: String) {
        self.kind = kind
        self.reason = reason
    }

    package var description: String { reason }
}
