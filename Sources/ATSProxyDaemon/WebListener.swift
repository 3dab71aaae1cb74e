import ATSPolicy
import EventLoop
import Glibc
import ProxyCore
import ProxyWire

/// The web listener (`--web-listen`): the live view, its event stream and `/metrics`, served on
/// the daemon's main loop, away from the proxy loops. Every quarter second it takes the lines the
/// proxy loops logged (``TrafficFeed``), gives them to the live view, and writes the view's update
/// to every open event stream. Main-thread-confined.
final class WebListener {
    /// The live view's update channel (``LocalReply/eventStream(channel:retryMilliseconds:)``).
    static let trafficChannel = "traffic"
    static let tick: Duration = .milliseconds(250)
    /// A comment line every so often keeps idle streams from being cut by the idle limit or NATs.
    static let heartbeatTicks = 60
    /// The most connections served at once; more are closed as they come, so that clients that
    /// hold connections open cannot take the descriptors the proxy needs.
    static let maximumConnections = 256

    private let base: EventBase
    private var listener: Listener?
    private let hub = EventStreamHub()
    private var connections: [ObjectIdentifier: SiteConnection] = [:]
    private let site: any LocalSite
    private let feed: TrafficFeed
    private let ingest: ([[UInt8]], Int) -> Void
    private let update: () -> [UInt8]?
    /// The token rule, with wrong tokens counted and slowed; a reload replaces its ``WebAccess``.
    private(set) var tokenGuard: WebTokenGuard
    var access: WebAccess {
        get { tokenGuard.access }
        set { tokenGuard.access = newValue }
    }
    var limits: SiteConnection.Limits
    private var clock: EventLoop.Timer?
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
    ///   - ingest: takes the lines logged since the last tick, and how many were dropped.
    ///   - update: the event for open streams when the view changed, else nil.
    init(
        base: EventBase, address: SocketAddress, site: any LocalSite, feed: TrafficFeed, access: WebAccess,
        limits: SiteConnection.Limits, ingest: @escaping ([[UInt8]], Int) -> Void, update: @escaping () -> [UInt8]?,
        welcome: @escaping () -> [UInt8]?
    ) throws(EventError) {
        self.base = base
        self.site = site
        self.feed = feed
        tokenGuard = WebTokenGuard(access: access)
        self.limits = limits
        self.ingest = ingest
        self.update = update
        listener = try Listener(base: base, address: address) { [unowned self] descriptor, peer in
            accept(descriptor, peer: peer)
        }
        clock = try EventLoop.Timer(base: base) { [unowned self] in tock() }
        clock?.schedule(after: Self.tick)
        hub.welcome = { channel in channel == Self.trafficChannel ? welcome() : nil }
        // Only now is anyone there to take the loops' lines.
        feed.isEnabled = true
    }

    private func accept(_ descriptor: Int32, peer: SocketAddress) {
        guard connections.count < Self.maximumConnections else {
            _ = Glibc.close(descriptor)
            return
        }
        guard let connection = try? SocketStream(base: base, descriptor: descriptor), let address else { return }
        let client = peer.ipAddress.map(\.description) ?? peer.description
        let pages = SiteConnection(
            stream: connection, site: site, client: client, arrival: .web, listener: address.description,
            limits: limits, hub: hub,
            gate: { [unowned self] request in gate(request) },
            onClose: { [unowned self] closed in connections[ObjectIdentifier(closed)] = nil }
        )
        connections[ObjectIdentifier(pages)] = pages
        pages.start()
    }

    private func gate(_ request: LocalRequest) -> GateDecision {
        let (decision, line) = tokenGuard.decide(request, now: MonotonicClock.nowMilliseconds())
        if let line { Daemon.say(line) }
        return decision
    }

    private func tock() {
        let (lines, dropped) = feed.take()
        if !lines.isEmpty || dropped > 0 { ingest(lines, dropped) }
        if hub.subscribers(of: Self.trafficChannel) > 0 {
            let due = ticks - lastUpdateTick >= Self.updateInterval(bytes: lastUpdateBytes)
            if due, let event = update() {
                hub.publish(event, on: Self.trafficChannel)
                lastUpdateTick = ticks
                lastUpdateBytes = event.count
            } else if ticks % Self.heartbeatTicks == 0 {
                hub.publish(Array(": still here\n\n".utf8), on: Self.trafficChannel)
            }
        }
        ticks += 1
        clock?.schedule(after: Self.tick)
    }

    /// Stops listening and closes every connection (the daemon is stopping).
    func close() {
        clock?.cancel()
        listener = nil
        feed.isEnabled = false
        hub.closeAll()
        for connection in Array(connections.values) { connection.close() }
    }
}
