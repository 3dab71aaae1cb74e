import ATSPolicy
import EventLoop
import Glibc
import ProxyCore
import ProxyWire
import TrafficReport

/// The web listener (`--web-listen`): the live view, its event stream and `/metrics`, served on
/// the daemon's main loop, away from the proxy loops. Every quarter second, and whenever half the
/// feed's capacity is waiting, it takes the lines the proxy loops logged (``TrafficFeed``) and gives
/// them to the live view; every quarter second it writes the view's update to every open event
/// stream. Main-thread-confined.
final class WebListener {
    /// The live view's update channel (``LocalReply/eventStream(channel:retryMilliseconds:)``).
    static let trafficChannel = "traffic"
    static let tick: Duration = .milliseconds(250)
    /// A comment line every so often keeps idle streams from being cut by the idle limit or NATs.
    static let heartbeatTicks = 60
    /// The most connections served at once; more are refused as they come, so that clients that
    /// hold connections open cannot take the descriptors the proxy needs. Room for every stream
    /// 64 addresses may hold, and the operator's beside them.
    static let maximumConnections = 512
    /// The most connections one client address may hold (a browser opens at most 6 to a host, and
    /// each tab of the live view one stream): one address's idle connections cannot fill the listener.
    static let maximumConnectionsPerClient = 32
    /// The most event streams one client address may hold (loopback too: a program on this machine
    /// can keep streams it never reads as easily as a remote one).
    static let maximumStreamsPerClient = 8

    private let base: EventBase
    private var listener: Listener?
    private let hub = EventStreamHub(maximumPerClient: WebListener.maximumStreamsPerClient)
    private var connections: [ObjectIdentifier: SiteConnection] = [:]
    /// Open connections by client address.
    private var perClient: [String: Int] = [:]
    /// The most connections open since ``takePeakConnections()`` last ran (for ``MemoryTrimmer``).
    private var peakConnections = 0
    /// The current state as the event a new stream opens with, made once until the state changes.
    private var welcomeEvent: SharedBytes?
    private let site: any LocalSite
    private let feed: TrafficFeed
    private let ingest: ([LoggedEntry], Int) -> Void
    private let update: () -> [UInt8]?
    /// The token rule, with wrong tokens counted and slowed; a reload replaces its ``WebAccess``.
    private(set) var tokenGuard: WebTokenGuard
    var access: WebAccess {
        get { tokenGuard.access }
        set { tokenGuard.access = newValue }
    }
    var limits: SiteConnection.Limits
    private var clock: EventLoop.Timer?
    private let tick: Duration
    /// Wakes this loop when the feed is half full between ticks (a rate of lines above what a tick
    /// holds), so that lines are taken in time instead of dropped.
    private var feedInbox: LoopInbox<Void>?
    private var missed = MissedLines()
    private var ticks = 0
    /// The tick of the last update written, and its size: a large state (each update is the whole
    /// of it) is sent less often, so a busy proxy's view costs each reader and this loop a bounded rate.
    private var lastUpdateTick = Int.min / 2
    private var lastUpdateBytes = 0

    /// Ticks between updates for a state of `bytes`: every tick up to 128 KiB, every second up to
    /// 1 MiB, every two seconds beyond.
    static func updateInterval(bytes: Int) -> Int {
        bytes <= 128 * 1024 ? 1 : bytes <= 1 << 20 ? 4 : 8
    }

    /// The address bound (with the port the kernel chose for port 0).
    var address: SocketAddress? { listener?.address }

    /// - Parameters:
    ///   - ingest: takes the entries logged since the last take, and how many were dropped (told
    ///     at most once a second, so possibly with none, or for earlier takes).
    ///   - update: the event for open streams when the view changed, else nil.
    ///   - tick: how often the feed is taken and updates are written (tests set it long, to see
    ///     the half-full wake-up alone).
    init(
        base: EventBase, address: SocketAddress, site: any LocalSite, feed: TrafficFeed, access: WebAccess,
        limits: SiteConnection.Limits, ingest: @escaping ([LoggedEntry], Int) -> Void, update: @escaping () -> [UInt8]?,
        welcome: @escaping () -> [UInt8]?, tick: Duration = WebListener.tick
    ) throws(EventError) {
        self.base = base
        self.site = site
        self.feed = feed
        tokenGuard = WebTokenGuard(access: access)
        self.limits = limits
        self.ingest = ingest
        self.update = update
        self.tick = tick
        listener = try Listener(base: base, address: address) { [unowned self] descriptor, peer in
            accept(descriptor, peer: peer)
        }
        clock = try EventLoop.Timer(base: base) { [unowned self] in tock() }
        clock?.schedule(after: tick)
        let inbox = try LoopInbox<Void>(base: base) { [unowned self] in takeFeed() }
        feedInbox = inbox
        let poster = inbox.poster
        feed.whenHalfFull { poster.post(()) }
        hub.welcome = { [unowned self] channel in
            guard channel == Self.trafficChannel else { return nil }
            // One copy of the state for every stream that opens before it changes: 256 streams
            // opened at once hold one welcome between them, not 256.
            if let welcomeEvent { return welcomeEvent }
            welcomeEvent = welcome().map(SharedBytes.init)
            return welcomeEvent
        }
        // Only now is anyone there to take the loops' lines.
        feed.isEnabled = true
    }

    /// How many connections are open now.
    var openConnections: Int { connections.count }

    /// The most connections open since the last call (a burst between two looks still shows).
    func takePeakConnections() -> Int {
        defer { peakConnections = connections.count }
        return max(peakConnections, connections.count)
    }

    private func accept(_ descriptor: Int32, peer: SocketAddress) {
        let client = peer.ipAddress.map(\.description) ?? peer.description
        if connections.count >= Self.maximumConnections {
            return refuse(
                descriptor, "this web listener serves \(Self.maximumConnections) connections at once, all taken")
        }
        if perClient[client, default: 0] >= Self.maximumConnectionsPerClient {
            return refuse(
                descriptor,
                "\(client) already holds \(Self.maximumConnectionsPerClient) connections to this web listener, the most one address may"
            )
        }
        guard let connection = try? SocketStream(base: base, descriptor: descriptor), let address else { return }
        let pages = SiteConnection(
            stream: connection, site: site, client: client, arrival: .web, listener: address.description,
            limits: limits, hub: hub,
            gate: { [unowned self] request in gate(request) },
            onClose: { [unowned self] closed in
                connections[ObjectIdentifier(closed)] = nil
                perClient[closed.client, default: 1] -= 1
                if perClient[closed.client] == 0 { perClient[closed.client] = nil }
            }
        )
        connections[ObjectIdentifier(pages)] = pages
        perClient[client, default: 0] += 1
        peakConnections = max(peakConnections, connections.count)
        pages.start()
    }

    /// Answers a connection turned away at accept with a 503 that says why (one write, which a new
    /// socket's buffer takes whole; no request is read) and closes it.
    private func refuse(_ descriptor: Int32, _ reason: String) {
        let response = LocalResponse.text(reason + "\n", status: 503, reason: "Service Unavailable")
        let bytes = response.serialized(keepAlive: false)
        _ = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
        _ = Glibc.close(descriptor)
    }

    private func gate(_ request: LocalRequest) -> GateDecision {
        let (decision, line) = tokenGuard.decide(request, now: MonotonicClock.nowMilliseconds())
        if let line { Daemon.say(line) }
        return decision
    }

    /// Gives the live view the lines logged since the last take, and the count of those dropped
    /// (at most once a second: ``MissedLines``).
    private func takeFeed() {
        let (entries, dropped) = feed.take()
        let missedNow = missed.add(dropped, now: MonotonicClock.nowMilliseconds())
        guard !entries.isEmpty || missedNow > 0 else { return }
        // The welcome is the state as it was: lines have changed it.
        welcomeEvent = nil
        ingest(entries, missedNow)
    }

    private func tock() {
        takeFeed()
        // The welcome lives one tick: the state may have changed since (a reload's policy).
        welcomeEvent = nil
        if hub.subscribers(of: Self.trafficChannel) > 0 {
            let due = ticks - lastUpdateTick >= Self.updateInterval(bytes: lastUpdateBytes)
            if due, let event = update() {
                hub.publish(event, on: Self.trafficChannel)
                lastUpdateTick = ticks
                lastUpdateBytes = event.count
            } else if ticks % Self.heartbeatTicks == 0 {
                hub.publishComment(Array(": still here\n\n".utf8), on: Self.trafficChannel)
            }
        }
        ticks += 1
        clock?.schedule(after: tick)
    }

    /// Stops listening and closes every connection (the daemon is stopping).
    func close() {
        clock?.cancel()
        listener = nil
        feed.isEnabled = false
        feed.whenHalfFull(nil)
        feedInbox = nil
        hub.closeAll()
        for connection in Array(connections.values) { connection.close() }
    }
}
