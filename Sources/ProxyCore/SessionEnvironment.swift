import EventLoop
import TLSInspection

/// What a ``ClientSession`` needs from the proxy around it: upstream connections, verdicts, the
/// log, and the loop's timers. ``ProxyServer`` on an event loop; a scripted environment in tests,
/// which drive a session with byte streams of their own, answer its dials and verdicts by hand, and
/// need no socket, no probe and no sleep.
///
/// Everything is called on, and answers on, the session's own loop (or the test's thread).
protocol SessionEnvironment: AnyObject {
    /// Where a missing intermediate is had (the loop's ``ProxyServer``); nil: not fetched.
    var intermediateSource: (any IntermediateSource)? { get }

    /// The settings new sessions start with.
    var settings: ProxySettings { get }
    /// The time as sessions read it (the system's clocks on a loop; the test's own in a script).
    var clock: any SessionClock { get }
    /// The proxy's own listening addresses, for the destination rules' loop check.
    var listeningAddresses: [SocketAddress] { get }
    /// Whether a graceful stop has begun: sessions then close instead of waiting for another request.
    var isDraining: Bool { get }
    /// A watch for a tunnel's or exchange's idle timeout, on the loop's clock (nil: no memory for one).
    func makeIdleWatch() -> (any IdleWatch)?

    /// Opens a connection upstream: to `address` when a verdict judged one, else to `host` by name,
    /// names from `hosts` first, each address vetted by `rules` and tried in turn within `timeout`. `completion` runs once,
    /// from the loop, unless the returned dial is cancelled first.
    func dial(
        host: String, port: UInt16, address: SocketAddress?, rules: DestinationRules, hosts: HostsTable?,
        timeout: Duration,
        completion: @escaping (Result<(any ByteStream, SocketAddress), UpstreamDialer.DialFailure>) -> Void
    ) -> any UpstreamDial

    /// Finds the verdict for `key`: from the cache, by joining a probe in flight, or by starting
    /// one with `rules`. `deliver` runs once with the report, from the loop (at once on a hit),
    /// unless the session has ended by then. `progress` hears of a probe this session started, as
    /// it goes (never of a cached verdict or a joined probe).
    func lookUpVerdict(
        _ key: VerdictKey, rules: DestinationRules, session: UInt64, progress: ((ProbeProgress) -> Void)?,
        deliver: @escaping (ProbeResult) -> Void)

    /// Writes one finished request or tunnel to the log and the counters.
    func log(_ record: ConnectionRecord)
    /// Writes `record` once `check` has answered (``LinesAwaitingChecks``): the session may be gone.
    func log(_ record: ConnectionRecord, after check: ServerNameCheck)
    /// Every address `host:port` resolves to through the loop's resolver (/etc/hosts, then DNS),
    /// asynchronously on the loop, unless cancelled; nil when no lookup could start.
    func lookUpAddresses(
        _ host: String, port: UInt16, completion: @escaping (Result<[SocketAddress], AddressLookupError>) -> Void
    ) -> AddressLookup?
    /// A tunnel was judged and now relays: the live view may show it before it ends (nothing is logged).
    func noteOpened(_ record: ConnectionRecord)

    // MARK: Intercept mode

    /// Intercept mode's shared parts; nil when the daemon has no CA (intercept mode is then off).
    var interceptService: InterceptService? { get }
    /// This loop's minted certificates (nil without an intercept service).
    var leafSource: (any LeafSource)? { get }
    /// This loop's resumable upstream sessions of intercepted tunnels (nil: none kept).
    var upstreamSessions: UpstreamSessionCache? { get }
    /// The TLS client context of `profile`: one per profile, shared by every loop.
    func upstreamContext(for profile: ClientProfile) throws(TLSError) -> TLSClientContext
    /// A one-shot timer on the loop (nil: no memory for one).
    func makeTimer(_ onFire: @escaping () -> Void) -> (any LoopTimer)?
    /// Writes one request line of an intercepted connection, now.
    func log(request: RequestRecord)
    /// Holds one request line of an intercepted connection until ``writeHeldLines()`` or the loop's
    /// next turn, whichever is first: one write for the lines of the streams one read ends. The
    /// caller writes them before the bytes that end those streams, so a client that has its answer
    /// finds its line in the log.
    func logHeld(request: RequestRecord)
    /// Writes the held lines now.
    func writeHeldLines()

    /// The session closed its client: it is forgotten.
    func sessionEnded(_ id: UInt64)
}

/// The time as a session reads it: every duration, deadline and timestamp of a session and what it
/// owns comes from here, so a scripted session's time moves only when its test says so.
protocol SessionClock {
    /// Milliseconds on a clock that never goes back (``MonotonicClock``): durations and deadlines.
    var monotonicMilliseconds: Int64 { get }
    /// The time of day in milliseconds since 1970 (UTC) (``WallClock``): the log's timestamps.
    var wallMilliseconds: Int64 { get }
}

extension SessionClock {
    /// The time of day in whole seconds since 1970: certificates' validity, minted leaves' dates.
    var wallSeconds: Int64 { wallMilliseconds / 1000 }
}

/// The system's clocks, as a loop's sessions read them.
struct SystemClock: SessionClock {
    var monotonicMilliseconds: Int64 { MonotonicClock.nowMilliseconds() }
    var wallMilliseconds: Int64 { WallClock.nowMilliseconds() }
}

/// Watches streams for the idle timeout (``IdleTimer`` on a loop; the test's own clock in a
/// scripted session).
protocol IdleWatch: AnyObject {
    /// Watches `streams` from now on: `onIdle` runs once when none has moved a byte for `limit`
    /// with none waiting, or bytes have waited for a reader for `stallLimit`.
    func start(
        limit: Duration, stallLimit: Duration, watching streams: [any ByteStream],
        onIdle: @escaping (IdleTimer.Ending) -> Void)
    /// Stops watching; nothing fires.
    func stop()
}

extension IdleTimer: IdleWatch {}

/// A connection being opened upstream, which the session cancels if it ends first.
protocol UpstreamDial: AnyObject {
    func cancel()
}

extension UpstreamDialer: UpstreamDial {}

extension SessionEnvironment {
    var intermediateSource: (any IntermediateSource)? { nil }
}
