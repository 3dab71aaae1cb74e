import EventLoop
import ProxyWire

/// Who handles the client's bytes, its end and its drained output at this moment: the one state
/// ``ClientSession``'s callbacks on the client dispatch on. The session sets those callbacks once,
/// in ``ClientSession/start()``, and hands the client over by changing this state, never by
/// reassigning them; each case carries what its reader needs.
///
/// Two layers take the client's callbacks over for the rest of the connection, each by its own
/// contract, and the session only closes the client after that: a ``TLSByteStream`` over it
/// (intercept mode's device leg, the pages over TLS), and a ``SpliceRelay`` (a judged tunnel's
/// bulk phase). The session's state stays `.tunnel` or `.site`, whose handler then reads the layer.
enum ClientReader {
    /// Nobody reads: a head is being routed, or a plain request's origin dialled. Reading is off;
    /// an end the client reports meanwhile is noted (``ClientSession/clientEnded``) for the next reader.
    case none
    /// The session reads a request head (``HeadReader``).
    case head(HeadReader)
    /// Answers to pipelined page requests wait unread: nothing is read until they are taken, then
    /// the next head is.
    case backlogged
    /// A plain-HTTP exchange reads the request body and watches the client's end.
    case exchange(PlainHTTPExchange)
    /// A CONNECT tunnel, from its head on: its first bytes, the relay, or intercept mode's handshake.
    case tunnel(ConnectTunnel)
    /// TLS to the proxy's own pages: the handshake, then the pages over it.
    case site(SiteTLSConnection)
    /// A captured connection's ClientHello is being read for its server name (the scanner, how many
    /// held bytes it has seen, and when its first byte was read: the whole hello is due within the
    /// head timeout of it); the bytes stay in the client's input for the tunnel.
    case capturedHello(TLSHelloScanner, scanned: Int, since: Int64)
    /// What the session queued for the client is being written; then the connection ends as
    /// `then` says.
    case closing(then: ClientEnd)
    /// Answered and half-closed: what the client still sends is dropped until `deadline`
    /// (the session clock's monotonic time) or a byte limit (`dropped` so far).
    case lingering(deadline: Int64, dropped: Int)
}

/// How the session ends a client connection once what it queued for the client is written.
enum ClientEnd {
    /// A clean close: a FIN after the last byte.
    case close
    /// Half-closed, then what the client still sends is dropped for a while before the close
    /// (``ClientSession``'s lingering close), so that no reset destroys the answer on its way.
    case linger
    /// A reset (``ByteStream/reset()``), never a FIN: a response was cut off, and a clean close
    /// would let the client take the part it has (a body that runs until the close) for the whole.
    case reset
}

/// What the session hands the client to: the session's callbacks on the client call these, and
/// only while the handler is the current ``ClientReader``.
protocol ClientBytesHandler: AnyObject {
    /// Bytes are buffered in the client's input (or a reader asked to be woken).
    func clientReadable()
    /// The client ended, failed or timed out.
    func clientEvent(_ event: StreamEvent)
    /// The client's output fell to the mark the handler asked its owner to wait for.
    func clientDrained()
}
