import ATSPolicy
import ArgumentParser
import ControlProtocol
import EventLoop
import Glibc
import Onboarding
import ProxyCore
import TLSInspection
import TextFormats
import WireGuard

/// The running proxy: one event loop per thread, the first listening for all of them and handing
/// clients to the others when it is busy, all sharing the policy, the probes and the verdict cache.
///
/// The main thread runs an event base of its own for everything that is not proxying: signals
/// (SIGTERM and SIGINT stop, SIGHUP reloads, SIGUSR1 reopens the log), the control socket, and the
/// graceful stop's clock. Everything here is confined to that thread; the proxy loops are reached
/// only through their inboxes.
final class Daemon {
    /// The settings in force (the restart-only ones as they were at start).
    var configuration: DaemonConfiguration
    /// Reads the config file and flags again: what a reload calls to pick up changed settings.
    let resolveConfiguration: @Sendable () throws(ConfigurationError) -> DaemonConfiguration
    let systemd = SystemdNotifier.fromEnvironment()
    let statistics = ProxyStatistics()
    let startedAt = WallClock.nowMilliseconds()

    // Set up by run(), before any command can arrive.
    var policy = LoadedPolicy.defaults(TransportSecurityPolicy())
    var cache = VerdictCache<VerdictKey, ProbeResult>(timeToLiveMilliseconds: 0)
    var log = LogWriter()
    /// `--hosts-file` as last read (at start, and by every reload that was applied).
    var hosts: HostsTable?
    var loops: [ProxyLoop] = []
    /// The loops' shared probe limits and contexts (for `status`: handshakes under way).
    var probes: ProbeService?
    /// Intercept mode's CA and leaves, read at start (nil: no CA in --ca-dir).
    var intercept: InterceptService?
    /// The CA read at start, whose certificate the onboarding pages offer (nil: none in --ca-dir).
    var authority: CertificateAuthority?
    /// The proxy's own pages as the loops have them (rebuilt on reload).
    var onboarding: OnboardingSite?
    /// The live view and /metrics (nil: web-listen off, or its default address was taken).
    var web: WebListener?
    /// The live view and metrics the web listener serves (nil with it).
    var webSite: WebSite?
    /// Every listener of the process, which no request may be sent to (the loops' and the web's).
    let listening = ListeningAddresses()
    /// What the loops log, on its way to the live view.
    let feed = TrafficFeed()
    /// Spreads clients from the listening loop over all loops.
    let balancer = LoopBalancer()
    var boundListeners: [String] = []
    var lastReload: ReloadOutcome?
    /// Reloads since start, by result (for the metrics).
    var reloads: [ReloadResult: Int] = [:]
    /// Returns a burst's memory to the system once it is over (nil until run() starts it).
    var memory: MemoryTrimmer?
    private var base: EventBase?
    /// `--wireguard-listen`'s tunnel (nil: none).
    var wireguard: WireGuardTunnel?
    /// The WireGuard devices' DNS (nil with no tunnel).
    var tunnelResolver: TunnelResolver?
    private var shutdown: Shutdown?

    init(
        configuration: DaemonConfiguration,
        resolveConfiguration: @escaping @Sendable () throws(ConfigurationError) -> DaemonConfiguration
    ) {
        self.configuration = configuration
        self.resolveConfiguration = resolveConfiguration
    }

    /// A proxy loop's thread, and the handle its inbox is posted with.
    struct ProxyLoop {
        let thread: EventLoopThread
        let messages: InboxPoster<ProxyMessage>
    }

    func run() throws {
        // The daemon's signals are taken by the main thread's base alone: blocked here before any
        // thread starts (threads inherit the mask), unblocked on this thread once their events exist.
        var handled = sigset_t()
        sigemptyset(&handled)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGCHLD] { sigaddset(&handled, signal) }
        pthread_sigmask(SIG_BLOCK, &handled, nil)
        signal(SIGPIPE, SIG_IGN)
        // A file that reaches the process's size limit (`ulimit -f`, systemd's LimitFSIZE=) makes
        // write(2) fail with EFBIG and raise SIGXFSZ, whose default kills the daemon and every
        // connection with it. The loops, which write the log, block every signal already; ignored,
        // a write from this thread (stderr redirected to a file, the CA's files) cannot kill it either.
        signal(SIGXFSZ, SIG_IGN)

        do { policy = try LoadedPolicy.load(configuration) } catch { throw configuration.unusableFile(.policy, error) }
        let anchors = try configuration.trustAnchors()
        if let path = configuration.logFile {
            do { log = try LogWriter(path: path) } catch { throw configuration.unusableFile(.logFile, error) }
        }
        do { hosts = try configuration.hostsTable() } catch { throw configuration.unusableFile(.hostsFile, error) }
        cache = VerdictCache(
            timeToLiveMilliseconds: configuration.verdictTTL.milliseconds, capacity: configuration.verdictCacheSize)

        let base = try EventBase()
        self.base = base
        let signals = try [
            SignalEvent(base: base, signal: SIGTERM) { [unowned self] in beginShutdown(signal: SIGTERM) },
            SignalEvent(base: base, signal: SIGINT) { [unowned self] in beginShutdown(signal: SIGINT) },
            SignalEvent(base: base, signal: SIGHUP) { [unowned self] in _ = reload(trigger: .hangUpSignal) },
            SignalEvent(base: base, signal: SIGUSR1) { [unowned self] in _ = reopenLogs() },
            // wireguard-go, the one child that runs beside the daemon.
            SignalEvent(base: base, signal: SIGCHLD) { [unowned self] in wireguard?.childEnded() },
        ]
        let control: ControlServer
        do {
            control = try ControlServer(base: base, path: configuration.controlSocket) { [unowned self] command in
                answer(command)
            }
        } catch {
            throw ConfigurationError(
                .unusableFile, origin: configuration.origins[.controlSocket] ?? .commandLine,
                key: ConfigKey.controlSocket.name,
                reason: "\(error)")
        }

        do throws(CertificateAuthorityError) {
            authority = try configuration.loadAuthority()
            intercept = try authority.map { authority throws(CertificateAuthorityError) in
                try configuration.interceptService(authority: authority)
            }
        } catch {
            guard case .missing = error.problem else { throw configuration.unusableFile(.caDir, error) }
            // No CA yet: the command that makes one, with this daemon's directory.
            throw configuration.unusableFile(
                .caDir,
                reason: "\(error) (intercept mode needs a CA: make one with atsproxyctl ca init --dir "
                    + "\(configuration.caDir), then start atsproxy again)")
        }
        if let mark = configuration.upstreamMark { try Self.checkMark(mark) }
        let probes = ProbeService(anchors: anchors)
        self.probes = probes
        // The tunnel first: its listener binds the proxy's address inside it.
        if let settings = configuration.wireguard {
            let names = configuration.deviceNames
            let tunnel = WireGuardTunnel(settings: settings, base: base) { devices in
                names.replace(
                    with: Dictionary(
                        devices.compactMap { device in IPAddress(device.address).map { ($0, device.name) } },
                        uniquingKeysWith: { first, _ in first }))
            }
            do { try tunnel.start() } catch {
                throw ConfigurationError(
                    .unusableFile, origin: configuration.origins[.wireguardListen] ?? .commandLine,
                    key: ConfigKey.wireguardListen.name, reason: error.description)
            }
            wireguard = tunnel
            do {
                tunnelResolver = try TunnelResolver(
                    base: base, upstream: TunnelResolver.hostResolver(), hosts: hosts,
                    names: configuration.resolvedNames)
            } catch {
                tunnel.stop()
                throw ConfigurationError(
                    .unusableFile, origin: configuration.origins[.wireguardListen] ?? .commandLine,
                    key: ConfigKey.wireguardListen.name,
                    reason:
                        "the devices' DNS at \(WireGuardNetwork.proxyAddress):53: \(error) (needs CAP_NET_BIND_SERVICE)"
                )
            }
            // Where phones reach it, for add-device to put in their configurations.
            let endpoint = DeviceAddresses.of(listeners: [settings.listen]).first ?? settings.listen.description
            do { try settings.directory.recordEndpoint(endpoint) } catch { Daemon.say("atsproxy: \(error)") }
        }
        defer {
            tunnelResolver?.close()
            wireguard?.stop()
        }
        try startLoops(probes: probes)
        // The pages name the addresses the listeners really bound (port 0 included): in place on
        // every loop before systemd hears the proxy is ready.
        // The web listener first: the pages link to it when a phone can reach it.
        try startWebListener(base: base)
        installOnboarding()
        memory = try MemoryTrimmer(base: base, statistics: statistics) { [unowned self] in
            web.map { (open: $0.openConnections, peak: $0.takePeakConnections()) } ?? (0, 0)
        }
        pthread_sigmask(SIG_UNBLOCK, &handled, nil)
        Daemon.say(
            "atsproxy listening on \(boundListeners.joined(separator: ", ")) with \(loops.count) thread\(loops.count == 1 ? "" : "s"), "
                + "\(configuration.mode.rawValue) mode, \(inspectDescription), policy \(policy.description), "
                + "\(policy.policy.settings.osProfile.rawValue) profile; control socket \(control.path)")
        if let wireguard {
            Daemon.say(
                "atsproxy: WireGuard on UDP port \(wireguard.settings.listen.port) (\(wireguard.interface), "
                    + "\(wireguard.engineName)\(wireguard.wireguardGoPID.map { " pid \($0)" } ?? ""), \(configuration.deviceNames.count) device(s) in "
                    + "\(wireguard.settings.directory.path)); atsproxyctl wireguard add-device NAME adds one")
        }
        Daemon.say(OnboardingBanner(addresses: deviceAddresses).text)
        // Only now, with every listener bound, may systemd start what depends on the proxy.
        tell(.ready, .mainPID(), .status(statusLine))

        base.run()
        // Everything the stop owes the world, in order, before it is said: the last lines are in
        // the log (the loops are joined), the tunnel and its rules are gone, the socket file too.
        web?.close()
        for loop in loops { loop.thread.stop() }
        tunnelResolver?.close()
        wireguard?.stop()
        control.close()
        withExtendedLifetime(signals) {}
        Daemon.say("atsproxy stopped")
    }

    /// How the start-up line names the inspect mode, with where the CA is in intercept mode.
    private var inspectDescription: String {
        guard configuration.intercept.mode == .intercept else { return "tunnel inspection" }
        return "intercept inspection (CA \(configuration.caDir)/\(CertificateAuthority.certificateFileName))"
    }

    private func startLoops(probes: ProbeService) throws {
        let endpoints =
            configuration.listeners + configuration.transparentListeners
            + (configuration.wireguard.map { [$0.listener] } ?? [])
        let settings = configuration.proxySettings(policy: policy.policy, hosts: hosts)
        let (cache, log, statistics, balancer, intercept, listening) = (
            cache, log, statistics, balancer, intercept, listening
        )
        let feed: TrafficFeed? = configuration.webListen == .off ? nil : feed
        for index in 0..<configuration.threads {
            // The first loop listens and hands clients to the others when it is busy (LoopBalancer).
            let listens = index == 0
            do {
                let (thread, info) = try EventLoopThread.start { base in
                    // The hosts file is in the settings (read once, above), not in each resolver.
                    let resolver = try DNSResolver(base: base)
                    let server = try ProxyServer(
                        base: base, endpoints: endpoints, listens: listens, balancer: balancer, settings: settings,
                        probes: probes, cache: cache, log: log, resolver: resolver, statistics: statistics,
                        listening: listening, intercept: intercept, feed: feed)
                    return (keepAlive: server, info: (server.addresses, server.messages))
                }
                guard let messages = info.1 else { throw EventError("starting a proxy loop", errno: 0) }
                loops.append(ProxyLoop(thread: thread, messages: messages))
                if listens { boundListeners = info.0.map(\.description) }
            } catch {
                for loop in loops { loop.thread.stop() }
                throw DaemonStartError(startingLoops: error)
            }
        }
    }

    /// Posts `message` to every proxy loop.
    func broadcast(_ message: ProxyMessage) {
        for loop in loops { loop.messages.post(message) }
    }

    // MARK: - Commands

    private func answer(_ command: ControlCommand) -> JSONValue {
        switch command {
        case .reload: return reload(trigger: .controlSocket).json
        case .status: return statusJSON
        case .stats: return statsJSON
        case .metrics: return metricsJSON
        case .flushCache:
            let dropped = cache.count
            cache.removeAll()
            // Fetched intermediates too: a CA that fixed its CA Issuers URL is fetched anew.
            probes?.intermediates.removeAnswers()
            return .object([("ok", true), ("command", .string(command.rawValue)), ("dropped", .int(dropped))])
        case .passthroughList:
            return .object([("ok", true), ("command", .string(command.rawValue))] + passedThroughFields)
        case .passthroughClear:
            let limit = configuration.intercept.rejectionsBeforePassthrough
            let cleared = intercept?.rejections.clear(limit: limit) ?? 0
            return .object([("ok", true), ("command", .string(command.rawValue)), ("cleared", .int(cleared))])
        case .reopenLogs:
            if let failure = reopenLogs() { return ControlServer.refusal(command: command, failure) }
            return .object([("ok", true), ("command", .string(command.rawValue)), ("log_file", .optional(log.path))])
        }
    }

    /// Reopens the log file (logrotate moved it); nil on success, else the reason, also said on stderr.
    private func reopenLogs() -> String? {
        do {
            try log.reopen()
            return nil
        } catch {
            Daemon.say("atsproxy: \(error); logging goes on to the old file")
            return error.description
        }
    }

    // MARK: - Stopping

    /// Where a graceful stop is.
    private struct Shutdown {
        let signal: Int32
        let deadline: Int64
        var closingAll = false
        var clock: EventLoop.Timer?
    }

    /// SIGTERM or SIGINT: stop accepting, let requests and tunnels finish for up to the shutdown
    /// timeout, then close what is left and stop. A second signal closes everything at once.
    private func beginShutdown(signal: Int32) {
        if shutdown != nil {
            Daemon.say("atsproxy: signal \(signal) again: closing every connection now")
            return closeAll()
        }
        let open = statistics.openConnections
        let limit = configuration.shutdownTimeout
        shutdown = Shutdown(signal: signal, deadline: WallClock.nowMilliseconds() + limit.milliseconds)
        tell(.stopping, .status("stopping (signal \(signal)): draining \(open) connection\(open == 1 ? "" : "s")"))
        Daemon.say(
            "atsproxy stopping (signal \(signal)): no new connections; \(open) open, given up to "
                + "\(limit.components.seconds) s to finish")
        broadcast(.drain)
        wireguard?.beginStopping()
        guard let base, let clock = try? EventLoop.Timer(base: base, onFire: { [unowned self] in checkShutdown() })
        else {
            return stopNow()
        }
        shutdown?.clock = clock
        clock.schedule(after: .zero)
    }

    /// Every 50 ms of a graceful stop: done when the last connection is gone; past the deadline,
    /// everything still open is closed (and logged) first.
    private func checkShutdown() {
        guard let state = shutdown else { return }
        if statistics.openConnections == 0 { return stopNow() }
        if !state.closingAll, WallClock.nowMilliseconds() >= state.deadline {
            Daemon.say("atsproxy: shutdown timeout: closing \(statistics.openConnections) connection(s) still open")
            closeAll()
        } else if state.closingAll, WallClock.nowMilliseconds() >= state.deadline + 2000 {
            return stopNow()  // The loops were told to close everything two seconds ago.
        }
        state.clock?.schedule(after: .milliseconds(50))
    }

    private func closeAll() {
        guard shutdown?.closingAll == false else { return }
        shutdown?.closingAll = true
        broadcast(.closeAll)
    }

    private func stopNow() {
        shutdown?.clock?.cancel()
        base?.stopper.stop()
    }

    // MARK: - Telling the world

    /// The one-line summary systemd shows in `systemctl status`.
    var statusLine: String {
        "listening on \(boundListeners.joined(separator: ", ")); \(configuration.mode.rawValue) mode; policy \(policy.description)"
    }

    /// Sends an sd_notify message; a failure is said on stderr and otherwise ignored, since the proxy
    /// serves its clients whether or not systemd hears about it.
    func tell(_ fields: SystemdNotifier.Field...) {
        do { try systemd.notify(fields) } catch { Daemon.say("atsproxy: cannot notify systemd: \(error)") }
    }

    /// Operational messages go to stderr; stdout carries the JSON log.
    static func say(_ message: String) {
        var line = Array((message + "\n").utf8)
        _ = line.withUnsafeMutableBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}
