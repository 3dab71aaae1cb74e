import ATSPolicy
import EventLoop
import Glibc
import LogRecord
import ProxyWire
import Synchronization
import TLSInspection
import TrafficReport

/// Whether non-compliant connections are refused or only logged.
package enum EnforcementMode: String, Sendable, CaseIterable {
    case enforce
    case report
}

/// What every loop of the proxy shares: the policy, the mode and the time limits.
package struct ProxySettings: Sendable {
    package var policy: TransportSecurityPolicy
    package var mode: EnforcementMode
    /// The ATS client of listeners that do not name their own.
    package var clientClass: ClientClass
    /// From a client's first byte, how long its request head may take (then 408).
    package var headTimeout: Duration
    /// How long a connection to an upstream may take to open.
    package var connectTimeout: Duration
    /// How long a probe's TLS handshake may take, from the moment its connection opened to the end
    /// of the handshake, however the server's bytes trickle in; a verdict's two handshakes share it.
    package var handshakeTimeout: Duration
    /// How long a tunnel or exchange may sit without a byte either way; also how long a keep-alive
    /// client may wait before its next request.
    package var idleTimeout: Duration
    /// Clients allowed to use the proxy; others get 403. Loopback only by default.
    package var allowedClients: [AddressRange]
    /// `--allow-destination`: ranges of local addresses (loopback, link-local, unspecified,
    /// multicast) every client may reach; otherwise only loopback clients may
    /// (``DestinationRules``). Empty by default.
    package var allowedDestinations: [AddressRange] = []
    /// How long bytes may wait for a reader that takes none of them before its tunnel or exchange
    /// is closed (when longer than the idle timeout). A paused reader is not idle; a reader that
    /// is alive but never reads again would otherwise hold its connections for ever, since TCP
    /// probes a zero window without end.
    package var stallTimeout: Duration = .seconds(300)
    /// `--aia-fetch`: whether a probe completes a path the server left an intermediate out of, from
    /// the CA Issuers URL of the certificate left without an issuer, as iOS does.
    package var fetchesIntermediates = true
    /// `--tunnel-start`: when a tunnel mode CONNECT to a host with no verdict yet gets its `200`.
    package var tunnelStart = TunnelStart.atConnect
    /// `--hosts-file`, read once per load or reload and shared by every loop: names it lists are
    /// dialled at its addresses (``UpstreamDialer``), before /etc/hosts and DNS. A reload that
    /// re-reads it delivers the new table with the rest of the settings, so a session dials with
    /// the table of the settings it started with.
    package var hosts: HostsTable?
    /// `--upstream-mark` (``UpstreamMarking``): the firewall mark (`SO_MARK`) of every connection the
    /// proxy opens upstream, which the rules that redirect devices' traffic to `--transparent-listen`
    /// exempt, so the proxy's own connections are never redirected back to it. nil: unmarked.
    package var upstreamMarking: UpstreamMarking?
    /// `--wireguard-listen`'s peers by tunnel address, which name each line's `device`; nil: no
    /// WireGuard. One table, shared by every loop and every settings value, replaced in place.
    package var deviceNames: DeviceNames?
    /// The names the WireGuard devices' DNS queries resolved (``ResolvedNames``), which name the
    /// address a captured connection dialled on its line (`dns_name`); nil: no WireGuard.
    package var resolvedNames: ResolvedNames?
    /// `--inspect` and the settings of intercept mode.
    package var intercept = InterceptSettings()
    /// The proxy's own pages (onboarding, PAC, CA downloads), answered for the onboarding host
    /// through the proxy and for requests sent straight to a listener; nil: such requests get 404.
    package var onboarding: (any LocalSite & Sendable)?

    package init(
        policy: TransportSecurityPolicy, mode: EnforcementMode = .enforce, clientClass: ClientClass = .urlsession,
        headTimeout: Duration = .seconds(10), connectTimeout: Duration = .seconds(10),
        handshakeTimeout: Duration = .seconds(10),
        idleTimeout: Duration = .seconds(300), allowedClients: [AddressRange] = ProxySettings.loopback
    ) {
        self.handshakeTimeout = handshakeTimeout
        self.policy = policy
        self.mode = mode
        self.clientClass = clientClass
        self.headTimeout = headTimeout
        self.connectTimeout = connectTimeout
        self.idleTimeout = idleTimeout
        self.allowedClients = allowedClients
    }

    package static let loopback: [AddressRange] = [
        try! AddressRange(parsing: "127.0.0.0/8"), try! AddressRange(parsing: "::1/128"),
    ]

    /// Whether a client at `address` may use the proxy (nil: not an IP address, refused). An IPv4
    /// client of an IPv6 listener (`::ffff:a.b.c.d`) is matched against IPv4 ranges.
    package func allows(client address: IPAddress?) -> Bool {
        guard let address = address?.unmapped else { return false }
        return allowedClients.contains { $0.contains(address) }
    }
}

/// An address to accept clients on, the ATS client its clients stand for (nil: the settings'),
/// and how they come to it: as a proxy's clients, or redirected by a firewall (`--transparent-listen`).
package struct ListenEndpoint: Sendable {
    package var address: SocketAddress
    package var clientClass: ClientClass?
    package var capture: CapturePath

    package init(address: SocketAddress, clientClass: ClientClass? = nil, capture: CapturePath = .proxy) {
        self.address = address
        self.clientClass = clientClass
        self.capture = capture
    }
}

/// A message to a loop: a probe's answer for one of its sessions, or an order from the daemon.
package enum ProxyMessage: Sendable {
    case probeFinished(session: UInt64, key: VerdictKey, result: ProbeResult)
    /// The answer to an intermediate this loop waited for while another loop fetched it.
    case intermediateFetched(request: UInt64, answer: IntermediateFetchCache.Answer)
    /// A reload: connections accepted from now on are judged by these settings; open ones keep theirs.
    /// `listenerClasses` gives each listener's own client class (nil: the settings'), in order.
    /// `applied` runs on the loop once they are in force, so the reload can answer only then.
    case settingsChanged(ProxySettings, listenerClasses: [ClientClass?], applied: @Sendable () -> Void)
    /// A graceful stop begins: close the listeners, let idle keep-alive clients go, and let every
    /// request and tunnel in progress finish.
    case drain
    /// The drain time is up: close every connection that is still open (each is logged).
    case closeAll
    /// A client the accepting loop handed to this one (``LoopBalancer``), from `listener`.
    case adopt(AcceptedSocket, peer: SocketAddress, listener: Int)
}

/// The proxy on one event loop: accepts clients, keeps their sessions, and receives probe results.
/// Loop-confined: created, used and released on its loop's thread.
package final class ProxyServer: LoopResident {
    let base: EventBase
    /// The settings new connections get; replaced by a reload (``ProxyMessage/settingsChanged(_:)``).
    private(set) var settings: ProxySettings
    let probes: ProbeService
    let cache: VerdictCache<VerdictKey, ProbeResult>
    let log: LogWriter
    let resolver: DNSResolver
    let statistics: ProxyStatistics
    /// Where logged lines also go for the live view (nil: no web listener).
    let feed: TrafficFeed?
    /// Every loop's view of the listeners, which requests must not be sent back to.
    let listening: ListeningAddresses
    private var listeners: [Listener] = []
    /// Each listener's own client class (nil: the settings'); a reload may change them.
    private var listenerClasses: [ClientClass?]
    /// How each listener's clients come to it (fixed for the daemon's run).
    private let listenerCaptures: [CapturePath]
    private var draining = false
    private var inbox: LoopInbox<ProxyMessage>?
    /// The handle other threads (probes, the daemon) post to this loop with.
    package private(set) var messages: InboxPoster<ProxyMessage>?
    private var sessions: [UInt64: ClientSession] = [:]
    /// Verdict probes under way on this loop. They belong to the loop, not to the session that
    /// started them: others may be waiting for the same verdict, and it is cached when it comes.
    private var probeRuns: [ObjectIdentifier: (run: VerdictProbeRun, slot: UpstreamSlot)] = [:]
    /// Probes waiting for an intermediate (``IntermediateSource``), by request.
    var intermediateRequests: [UInt64: (IntermediateFetchCache.Answer, Bool) -> Void] = [:]
    /// The fetches this loop makes for every loop, by the request that started them.
    var intermediateRuns: [UInt64: (run: IntermediateFetchRun, url: String)] = [:]
    var nextIntermediateRequest: UInt64 = 0
    /// The last few distinct probe results, whose facts later identical ones share
    /// (``sharingRecentFacts(_:)``).
    var recentResults: [ProbeResult] = []
    /// Session numbers, unique across the loops of the process: the log's `connection_id`.
    private static let sessionNumbers = Atomic<UInt64>(1)
    /// This loop's connection count, which the balancer reads.
    package let load = LoopLoad()
    /// Shared by the loops of one proxy; nil: this loop serves everything it accepts.
    private let balancer: LoopBalancer?
    /// Intercept mode's shared parts (nil: no CA, intercept mode off) and this loop's leaves.
    let interceptService: InterceptService?
    private(set) lazy var leafSource: (any LeafSource)? = interceptService?.makeLeafSource()
    /// Lines of captured connections waiting for their server-name check.
    private let linesAwaitingChecks = LinesAwaitingChecks()
    /// The lines this loop logged since its last turn (``LogBatch``).
    private let logBatch: LogBatch
    private(set) lazy var upstreamSessions: UpstreamSessionCache? = interceptService.map { _ in UpstreamSessionCache() }

    package convenience init(
        base: EventBase, listen addresses: [SocketAddress], settings: ProxySettings,
        probes: ProbeService, cache: VerdictCache<VerdictKey, ProbeResult>, log: LogWriter, resolver: DNSResolver,
        statistics: ProxyStatistics = ProxyStatistics()
    ) throws(EventError) {
        try self.init(
            base: base, endpoints: addresses.map { ListenEndpoint(address: $0) }, settings: settings, probes: probes,
            cache: cache, log: log, resolver: resolver, statistics: statistics, listening: ListeningAddresses())
    }

    /// - Parameters:
    ///   - endpoints: the proxy's listeners; their client classes apply to adopted clients too.
    ///   - listens: whether this loop listens on `endpoints`; with a `balancer`, one loop does, and
    ///     the others serve the clients it hands them.
    ///   - balancer: joined at start; spreads this loop's accepted clients over the loops.
    ///   - listening: shared by every loop of one proxy; the listening loop publishes its bound
    ///     addresses there, so that every loop refuses requests addressed to them.
    package init(
        base: EventBase, endpoints: [ListenEndpoint], listens: Bool = true, balancer: LoopBalancer? = nil,
        settings: ProxySettings, probes: ProbeService, cache: VerdictCache<VerdictKey, ProbeResult>, log: LogWriter,
        resolver: DNSResolver, statistics: ProxyStatistics = ProxyStatistics(), listening: ListeningAddresses,
        intercept: InterceptService? = nil, feed: TrafficFeed? = nil
    ) throws(EventError) {
        interceptService = intercept
        self.feed = feed
        self.base = base
        self.listening = listening
        self.statistics = statistics
        listenerClasses = endpoints.map(\.clientClass)
        listenerCaptures = endpoints.map(\.capture)
        self.settings = settings
        self.probes = probes
        self.cache = cache
        self.log = log
        logBatch = LogBatch(writer: log) { [base] in try? Timer(base: base, onFire: $0) }
        self.resolver = resolver
        self.balancer = balancer
        // Both callbacks reach the server through weak references: the server owns them.
        let inbox = try LoopInbox<ProxyMessage>(base: base) { [weak self] message in self?.handle(message) }
        self.inbox = inbox
        messages = inbox.poster
        balancer?.join(load: load, inbox: inbox.poster)
        guard listens else { return }
        for (index, endpoint) in endpoints.enumerated() {
            let listener = try Listener(base: base, address: endpoint.address) { [weak self] descriptor, peer in
                self?.accept(descriptor, peer: peer, listener: index)
            }
            listener.onPause = { [weak self] code in self?.acceptingPaused(errno: code) }
            listeners.append(listener)
        }
        listening.publish(listeners.map(\.address))
    }

    /// The addresses clients connect to (with the port the kernel chose for port 0).
    package var addresses: [SocketAddress] { listeners.map(\.address) }

    package var activeSessions: Int { sessions.count }

    private func accept(_ descriptor: Int32, peer: SocketAddress, listener: Int) {
        guard let destination = balancer?.destination(acceptedBy: load) else {
            return serve(descriptor, peer: peer, listener: listener)
        }
        // If that loop has stopped, the message is dropped and the socket closes with it.
        destination.post(.adopt(AcceptedSocket(descriptor), peer: peer, listener: listener))
    }

    private func serve(_ descriptor: Int32, peer: SocketAddress, listener: Int) {
        // Read before the stream takes the descriptor: where a redirected connection was going.
        var capture = SessionCapture.proxy
        let path = listenerCaptures[listener]
        if path != .proxy {
            let original = SocketAddress.capturedDestination(of: descriptor)
            let ownConnection = original.map { settings.upstreamMarking?.opening.contains(peer: peer, original: $0) }
            capture =
                ownConnection == true
                ? .loopedBack(original: original, path: path) : .redirected(original: original, path: path)
        }
        let connection: SocketStream
        do {
            connection = try SocketStream(base: base, descriptor: descriptor)
        } catch {
            return  // Connection closed the descriptor; nothing else to undo.
        }
        let id = Self.sessionNumbers.add(1, ordering: .relaxed).oldValue
        // One IPAddress for both the allow list and the log's `client`: printing the socket address
        // and parsing the text back cost more than the rest of accepting.
        let address = peer.withAddressBytes { IPAddress(networkBytes: $0) }
        let client = address.map { "\(HostIdentity.address($0).urlForm):\(peer.port)" } ?? peer.description
        let session = ClientSession(
            id: id, environment: self, client: connection, peer: client, address: address,
            allowed: settings.allows(client: address), clientClass: listenerClasses[listener] ?? settings.clientClass,
            capture: capture, device: settings.deviceNames?.name(of: address))
        session.localAddress = { [unowned connection] in connection.localAddress }
        sessions[id] = session
        statistics.connectionOpened()
        load.connectionOpened()
        session.start()
    }

    /// When accepting last paused for want of descriptors was said (``MonotonicClock``).
    private var exhaustionSaidAt: Int64?

    /// Accepting paused (out of descriptors): said on stderr once per burst (again only after a
    /// minute), with what to do, since every new client waits meanwhile.
    private func acceptingPaused(errno code: Int32) {
        let now = MonotonicClock.nowMilliseconds()
        if let said = exhaustionSaidAt, now - said < 60_000 { return }
        exhaustionSaidAt = now
        let reason = String(cString: strerror(code))
        var text = Array(
            ("atsproxy: cannot accept clients (\(reason)): new clients wait until descriptors are free; "
                + "\(statistics.openConnections) connections are open. Raise the open-file limit (LimitNOFILE= in the unit, ulimit -n)\n")
                .utf8)
        _ = text.withUnsafeMutableBytes { Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }

    func sessionEnded(_ id: UInt64) {
        guard sessions.removeValue(forKey: id) != nil else { return }
        statistics.connectionClosed()
        load.connectionClosed()
    }

    /// Probes `key` on this loop, within the service's limits; `completion` runs from the loop with
    /// the answer (a failure result when no probe slot is free).
    func startProbe(
        _ key: VerdictKey, rules: DestinationRules, progress: ((ProbeProgress) -> Void)? = nil,
        completion: @escaping (ProbeResult) -> Void
    ) {
        let slot = UpstreamSlot(host: key.host, port: key.port)
        let counts = statistics.probes
        if let busy = probes.reserve(slot) {
            counts.probeNotStarted()
            return completion(ProbeResult(upstreamFailure: .probeLimit(reason: busy)))
        }
        let run = VerdictProbeRun(
            key: key, service: probes, base: base, resolver: resolver, limits: settings.probeLimits, rules: rules,
            intermediates: self)
        let id = ObjectIdentifier(run)
        probeRuns[id] = (run, slot)
        counts.probeStarted()
        let began = ContinuousClock.now
        run.start(progress: progress) { [weak self] result in
            counts.probeFinished(result, after: ContinuousClock.now - began)
            if let self, probeRuns.removeValue(forKey: id) != nil { probes.release(slot) }
            completion(result)
        }
    }

    /// Stops every probe under way (the loop is stopping; nobody will read their answers) and
    /// gives their slots back.
    private func cancelProbes() {
        let runs = probeRuns.values
        probeRuns = [:]
        statistics.probes.probesCancelled(runs.count)
        for (run, slot) in runs {
            run.cancel()
            probes.release(slot)
        }
        cancelIntermediateFetches()
    }

    deinit { cancelProbes() }

    /// The loop stopped with sessions still open (a test's proxy, or a stop without a drain): each
    /// closes now, its line saying so, while the base its connections belong to is alive.
    package func loopEnded() { closeAll() }

    /// Closes every session (its line says the proxy is shutting down) and stops every probe.
    private func closeAll() {
        for session in Array(sessions.values) { session.closeForShutdown() }
        // Before the resolver goes with the loop: it would answer none of them.
        linesAwaitingChecks.releaseAll()
        cancelProbes()
        // The loop may not turn again: what the closes logged is written now, and any later line at once.
        logBatch.writeThrough()
    }

    /// Whether a graceful stop has begun (``SessionEnvironment``).: sessions then close instead of waiting for another request.
    var isDraining: Bool { draining }

    private func handle(_ message: ProxyMessage) {
        switch message {
        case .probeFinished(let id, let key, let result):
            sessions[id]?.probeFinished(result, for: key)
        case .intermediateFetched(let request, let answer):
            intermediateRequests.removeValue(forKey: request)?(answer, false)
        case .settingsChanged(let settings, let classes, let applied):
            self.settings = settings
            // The classes are the proxy listeners'; transparent listeners (last) take the settings'.
            let transparent = listenerCaptures.count { $0 == .transparent }
            if classes.count == listenerClasses.count - transparent {
                listenerClasses = classes + Array(repeating: nil, count: transparent)
            }
            // Sessions judged under the old settings (hosts table, client classes) are not offered again.
            upstreamSessions?.removeAll()
            applied()
        case .drain:
            draining = true
            listeners = []  // Freeing a listener closes its socket: new clients are refused.
            for session in Array(sessions.values) { session.drain() }
        case .closeAll:
            closeAll()
        case .adopt(let socket, let peer, let listener):
            guard let descriptor = socket.take() else { return }
            serve(descriptor, peer: peer, listener: listener)
        }
    }

    static func nowMilliseconds() -> Int64 { WallClock.nowMilliseconds() }
}

extension ProxyServer: SessionEnvironment {
    var clock: any SessionClock { SystemClock() }

    var listeningAddresses: [SocketAddress] { listening.current }

    // event_new fails only without memory.
    func makeIdleWatch() -> (any IdleWatch)? { try? IdleTimer(base: base) }

    func lookUpAddresses(
        _ host: String, port: UInt16, completion: @escaping (Result<[SocketAddress], AddressLookupError>) -> Void
    ) -> AddressLookup? {
        resolver.lookUp(host, port: port, completion: completion)
    }

    func dial(
        host: String, port: UInt16, address: SocketAddress?, rules: DestinationRules, hosts: HostsTable?,
        timeout: Duration,
        completion: @escaping (Result<(any ByteStream, SocketAddress), UpstreamDialer.DialFailure>) -> Void
    ) -> any UpstreamDial {
        let dialer = UpstreamDialer(
            base: base, resolver: resolver, hosts: hosts, timeout: timeout, marking: settings.upstreamMarking,
            vet: rules.vet)
        let finished: (Result<(SocketStream, SocketAddress), UpstreamDialer.DialFailure>) -> Void = { result in
            completion(result.map { ($0.0, $0.1) })
        }
        if let address {
            dialer.connect(to: address, host: host, completion: finished)
        } else {
            dialer.dial(host: host, port: port, completion: finished)
        }
        return dialer
    }

    func lookUpVerdict(
        _ key: VerdictKey, rules: DestinationRules, session: UInt64, progress: ((ProbeProgress) -> Void)?,
        deliver: @escaping (ProbeResult) -> Void
    ) {
        guard let poster = messages else { return }
        let cache = self.cache
        switch cache.lookup(
            key, now: ProxyServer.nowMilliseconds(),
            waiter: { result in
                poster.post(.probeFinished(session: session, key: key, result: result))
            })
        {
        case .hit(let result):
            deliver(result)
        case .waiting:
            return
        case .probe:
            startProbe(key, rules: rules, progress: progress) { [weak self] result in
                // Unreachable upstreams are not cached: the next request tries again. Nor are
                // refusals (they carry an upstream failure): they hold for this client's rules only;
                // nor is a path whose missing intermediate could not be fetched, which another
                // client's rules may let it fetch (the fetch cache keeps the failure a minute).
                let fetchFailed = result.observed?.intermediateFetches.contains(where: \.failed) ?? false
                if result.upstreamFailure != nil || fetchFailed {
                    cache.abandon(key, answering: result)
                } else {
                    let result = self?.sharingRecentFacts(result) ?? result
                    cache.complete(key, with: result, now: ProxyServer.nowMilliseconds())
                }
                poster.post(.probeFinished(session: session, key: key, result: result))
            }
        }
    }

    /// `report`, sharing the facts' storage with a recent report that saw the same server (the
    /// last few distinct ones are kept, per loop).
    func sharingRecentFacts(_ result: ProbeResult) -> ProbeResult {
        if let same = recentResults.first(where: result.isSame) { return same }
        if let recent = recentResults.first(where: result.hasSameFacts) { return result.sharingFacts(with: recent) }
        if result.observed != nil {
            recentResults.insert(result, at: 0)
            if recentResults.count > 16 { recentResults.removeLast() }
        }
        return result
    }

    /// Written at once, after the lines held before it: a session logs before it closes its client.
    func log(_ record: ConnectionRecord) {
        let line = record.logLine
        feed?.append(line)
        logBatch.writeNow(line)
        statistics.logged(record)
    }

    func log(_ record: ConnectionRecord, after check: ServerNameCheck) {
        linesAwaitingChecks.hold(record, until: check) { [unowned self] record in log(record) }
    }

    func upstreamContext(for profile: ClientProfile) throws(TLSError) -> TLSClientContext {
        try probes.context(for: profile)
    }

    func makeTimer(_ onFire: @escaping () -> Void) -> (any LoopTimer)? { try? Timer(base: base, onFire: onFire) }

    func noteOpened(_ record: ConnectionRecord) {
        guard let feed, feed.isEnabled else { return }  // The line is built only for a live view.
        feed.append(record.openLine)
    }

    func log(request: RequestRecord) { log(request: request, held: false) }

    func logHeld(request: RequestRecord) { log(request: request, held: true) }

    /// The live view and the counters have a held line at once; the file on the batch's write.
    private func log(request: RequestRecord, held: Bool) {
        let line = request.logLine
        if let feed, feed.isEnabled {
            feed.append(entry: request.loggedRequest.map(LoggedEntry.request) ?? .line(line))
        }
        if held { logBatch.append(line) } else { logBatch.writeNow(line) }
        statistics.logged(request: request)
    }

    func writeHeldLines() { logBatch.flush() }
}
