import ATSPolicy
import EventLoop
import Glibc

/// Whether non-compliant connections are refused or only logged.
public enum EnforcementMode: String, Sendable, CaseIterable {
    case enforce
    case report
}

/// What every loop of the proxy shares: the policy, the mode and the time limits.
public struct ProxySettings: Sendable {
    public var policy: TransportSecurityPolicy
    public var mode: EnforcementMode
    /// The ATS client of listeners that do not name their own.
    public var clientClass: ClientClass
    /// From a client's first byte, how long its request head may take (then 408).
    public var headTimeout: Duration
    /// How long a connection to an upstream may take to open.
    public var connectTimeout: Duration
    /// How long a tunnel or exchange may sit without a byte either way; also how long a keep-alive
    /// client may wait before its next request.
    public var idleTimeout: Duration
    /// Clients allowed to use the proxy; others get 403. Loopback only by default.
    public var allowedClients: [AddressRange]

    public init(
        policy: TransportSecurityPolicy, mode: EnforcementMode = .enforce, clientClass: ClientClass = .urlsession,
        headTimeout: Duration = .seconds(10), connectTimeout: Duration = .seconds(10), idleTimeout: Duration = .seconds(300),
        allowedClients: [AddressRange] = ProxySettings.loopback
    ) {
        self.policy = policy
        self.mode = mode
        self.clientClass = clientClass
        self.headTimeout = headTimeout
        self.connectTimeout = connectTimeout
        self.idleTimeout = idleTimeout
        self.allowedClients = allowedClients
    }

    public static let loopback: [AddressRange] = [
        try! AddressRange(parsing: "127.0.0.0/8"), try! AddressRange(parsing: "::1/128"),
    ]

    /// Whether a client at `peer` may use the proxy.
    func allows(peer: SocketAddress) -> Bool {
        guard let host = peer.host, let address = IPAddress(host) else { return false }
        return allowedClients.contains { $0.contains(address) }
    }
}

/// An address to accept clients on, and the ATS client its clients stand for (nil: the settings').
public struct ListenEndpoint: Sendable {
    public var address: SocketAddress
    public var clientClass: ClientClass?

    public init(address: SocketAddress, clientClass: ClientClass? = nil) {
        self.address = address
        self.clientClass = clientClass
    }
}

/// A message from a probe thread to the loop that asked.
enum ProxyMessage: Sendable {
    case probeFinished(session: UInt64, report: ProbeReport)
}

/// The proxy on one event loop: accepts clients, keeps their sessions, and receives probe results.
/// Loop-confined: created, used and released on its loop's thread.
public final class ProxyServer {
    let base: EventBase
    let settings: ProxySettings
    let probes: ProbeService
    let cache: VerdictCache<VerdictKey, ProbeReport>
    let log: LogWriter
    let resolver: DNSResolver
    private var listeners: [Listener] = []
    private var inbox: LoopInbox<ProxyMessage>?
    private(set) var poster: InboxPoster<ProxyMessage>?
    private var sessions: [UInt64: ClientSession] = [:]
    private var nextSessionID: UInt64 = 1

    public convenience init(
        base: EventBase, listen addresses: [SocketAddress], sharedPorts: Bool = false, settings: ProxySettings,
        probes: ProbeService, cache: VerdictCache<VerdictKey, ProbeReport>, log: LogWriter, resolver: DNSResolver
    ) throws(EventError) {
        try self.init(
            base: base, endpoints: addresses.map { ListenEndpoint(address: $0) }, sharedPorts: sharedPorts,
            settings: settings, probes: probes, cache: cache, log: log, resolver: resolver)
    }

    public init(
        base: EventBase, endpoints: [ListenEndpoint], sharedPorts: Bool = false, settings: ProxySettings,
        probes: ProbeService, cache: VerdictCache<VerdictKey, ProbeReport>, log: LogWriter, resolver: DNSResolver
    ) throws(EventError) {
        self.base = base
        self.settings = settings
        self.probes = probes
        self.cache = cache
        self.log = log
        self.resolver = resolver
        // Both callbacks reach the server through weak references: the server owns them.
        let inbox = try LoopInbox<ProxyMessage>(base: base) { [weak self] message in self?.handle(message) }
        self.inbox = inbox
        poster = inbox.poster
        for endpoint in endpoints {
            let clientClass = endpoint.clientClass ?? settings.clientClass
            listeners.append(
                try Listener(base: base, address: endpoint.address, sharedPort: sharedPorts) { [weak self] descriptor, peer in
                    self?.accept(descriptor, peer: peer, clientClass: clientClass)
                })
        }
    }

    /// The addresses clients connect to (with the port the kernel chose for port 0).
    public var addresses: [SocketAddress] { listeners.map(\.address) }

    public var activeSessions: Int { sessions.count }

    private func accept(_ descriptor: Int32, peer: SocketAddress, clientClass: ClientClass) {
        let connection: Connection
        do {
            connection = try Connection(base: base, descriptor: descriptor)
        } catch {
            return  // Connection closed the descriptor; nothing else to undo.
        }
        let id = nextSessionID
        nextSessionID += 1
        let session = ClientSession(
            id: id, server: self, client: connection, peer: peer.description, allowed: settings.allows(peer: peer),
            clientClass: clientClass)
        sessions[id] = session
        session.start()
    }

    func sessionEnded(_ id: UInt64) { sessions[id] = nil }

    private func handle(_ message: ProxyMessage) {
        switch message {
        case .probeFinished(let id, let report):
            sessions[id]?.probeFinished(report)
        }
    }

    static func nowMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}
