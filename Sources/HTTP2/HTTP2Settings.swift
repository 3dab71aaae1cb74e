/// What one end of an HTTP/2 connection announces in its SETTINGS and the limits it holds the peer
/// to. The defaults bound what one peer can make the proxy hold: streams, window, header lists.
package struct HTTP2Settings: Sendable, Equatable {
    /// SETTINGS_MAX_CONCURRENT_STREAMS: how many streams the peer may open at once (a server's own
    /// limit; a client announces it for pushes, which it refuses anyway).
    package var maxConcurrentStreams: UInt32 = 100
    /// SETTINGS_INITIAL_WINDOW_SIZE: how many body bytes of one stream the peer may send before it
    /// hears that they were taken; with ``connectionWindowSize``, the most one peer can make the
    /// proxy hold.
    /// 256 KiB: with the protocol's 64 KiB, one stream could move only 64 KiB per round trip through a
    /// relay that reopens the window as the other leg frames the bytes (bench-h2: 0.2x direct). The
    /// connection window still bounds what all the streams of one peer can make the proxy hold.
    package var initialWindowSize: UInt32 = 256 * 1024
    /// The connection's receive window (a WINDOW_UPDATE on stream 0 at the start when larger than
    /// the protocol's 65,535).
    package var connectionWindowSize: UInt32 = 1 << 20
    /// SETTINGS_MAX_HEADER_LIST_SIZE, enforced: a stream whose header list is larger is reset.
    package var maxHeaderListSize: UInt32 = 64 * 1024
    /// SETTINGS_HEADER_TABLE_SIZE: the HPACK dynamic table the peer may make the proxy keep.
    package var headerTableSize: UInt32 = 4096
    /// SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 8441): whether the peer may open WebSockets as streams.
    package var enableConnectProtocol = false
    /// The most RST_STREAMs a peer may make the session send or receive in a burst, and then per
    /// second, before it is told ENHANCE_YOUR_CALM (Rapid Reset, CVE-2023-44487).
    package var streamResetBurst: UInt64 = 1000
    package var streamResetsPerSecond: UInt64 = 33
    /// The most CONTINUATION frames after one HEADERS (the CONTINUATION flood, CVE-2024-27316's kin).
    package var maxContinuations = 8
    /// The most SETTINGS and PING acknowledgements the session queues before it ends the connection
    /// (a flood of either that the peer never reads).
    package var maxOutboundAcks = 1000

    package init() {}
}
