/// Why the handshake as an ATS client failed, as far as Apple's error depends on it: a server that
/// hangs up without an alert is errSSLClosedNoNotify (-9816) to Apple's client, not a handshake
/// failure (-9824) (Apple's Security framework error codes, SecBase.h: errSSLClosedNoNotify,
/// errSSLPeerHandshakeFail).
public struct HandshakeFailure: Sendable, Hashable, CustomStringConvertible {
    /// The failure in OpenSSL's words.
    public var reason: String
    /// Whether the server closed the connection mid-handshake with no alert (an unexpected EOF).
    public var serverClosedWithoutAlert: Bool
    /// Whether the failed hello was iOS 26's, about 1.6 KB over two TCP segments: when a small hello
    /// then completes, its size is the likely cause (a server or middlebox that reads the hello from
    /// one segment).
    public var largeHello: Bool

    public init(reason: String, serverClosedWithoutAlert: Bool = false, largeHello: Bool = false) {
        self.reason = reason
        self.serverClosedWithoutAlert = serverClosedWithoutAlert
        self.largeHello = largeHello
    }

    public var description: String { reason }

    /// What Apple's client reports for it: -1200 with -9816 (errSSLClosedNoNotify) for an EOF, -9824
    /// (errSSLPeerHandshakeFail) for the rest.
    public var appleError: AppleError { AppleError(nsurl: -1200, ssl: serverClosedWithoutAlert ? -9816 : -9824) }
}
