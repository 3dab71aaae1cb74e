import ATSPolicy
import EventLoop
import Glibc
import POSIX
import ProxyCore
import ProxyWire
import TLSInspection
import WireGuard

/// The WireGuard devices' DNS: every UDP query a device sends to port 53, whichever server it
/// names, is redirected here (``WireGuardRules``), at the proxy's tunnel address. A name in
/// `--hosts-file` is answered from it, as the proxy itself dials it; any other query is forwarded
/// byte for byte to the host's resolver (the first `nameserver` of /etc/resolv.conf) from a socket
/// of its own, and its answer relayed. The addresses of each answer are recorded
/// (``ResolvedNames``), so a connection that names no server still says which name it looked up.
///
/// DNS over TCP is answered too, at the same address (``TunnelResolverStream``): a device retries
/// over TCP when a UDP answer came truncated, and such a query is forwarded over TCP.
///
/// On the daemon's main thread. At most ``maximumPending`` queries wait for the host's resolver,
/// each for ``timeout``; a query beyond them, or unparsable, is dropped (the device asks again). At
/// most ``maximumStreams`` devices' TCP connections are open, ``maximumStreamsPerDevice`` of one
/// device's; one more is closed at once.
final class TunnelResolver {
    static let maximumPending = 256
    static let maximumStreams = 64
    static let maximumStreamsPerDevice = 8
    static let timeout: Duration = .seconds(5)

    private struct Pending {
        /// The query's own socket: a datagram one, or a TCP connection for a query that came over TCP.
        let socket: AnyObject
        let timer: EventLoop.Timer
        /// Told when the query goes unanswered (timed out, or the host's resolver closed).
        let unanswered: () -> Void
    }

    private let base: EventBase
    private var server: DatagramSocket?
    private var streamServer: Listener?
    /// The devices' open TCP connections, with the device of each.
    private var streams: [ObjectIdentifier: (connection: TunnelResolverStream, device: IPAddress)] = [:]
    /// The host's resolver (``hostResolver(path:)``), read again on every reload.
    var upstream: SocketAddress
    private let names: ResolvedNames
    private var pending: [UInt64: Pending] = [:]
    private var nextID: UInt64 = 0
    /// `--hosts-file` as the daemon last read it (a reload replaces it).
    var hosts: HostsTable?

    init(base: EventBase, upstream: SocketAddress, hosts: HostsTable?, names: ResolvedNames) throws(EventError) {
        self.base = base
        self.upstream = upstream
        self.hosts = hosts
        self.names = names
        let local = try SocketAddress(parsing: "\(WireGuardNetwork.proxyAddress):53")
        server = try DatagramSocket(base: base, local: local) { [unowned self] bytes, client in
            guard let device = Self.device(client) else { return }
            _ = resolve(bytes, device: device, overTCP: false, unanswered: {}) { [unowned self] answer in
                server?.send(answer, to: client)
            }
        }
        streamServer = try Listener(base: base, address: local) { [unowned self] descriptor, client in
            accept(descriptor, from: client)
        }
    }

    /// The device a query came from: only the tunnel's own. WireGuard vouches for their addresses;
    /// anyone else who routes a query here (a LAN host with a route to the tunnel's network) gets
    /// nothing, so this is no open resolver for the host's network.
    private static func device(_ client: SocketAddress) -> IPAddress? {
        guard let address = client.withAddressBytes({ IPAddress(networkBytes: $0) }),
            WireGuardSettings.network.contains(address.unmapped)
        else { return nil }
        return address
    }

    private func accept(_ descriptor: Int32, from client: SocketAddress) {
        guard let device = Self.device(client), streams.count < Self.maximumStreams,
            streams.values.count(where: { $0.device == device }) < Self.maximumStreamsPerDevice
        else {
            Glibc.close(descriptor)
            return
        }
        // SocketStream closes the descriptor itself when it cannot be made.
        guard let socket = try? SocketStream(base: base, descriptor: descriptor) else { return }
        let connection = TunnelResolverStream(
            stream: socket,
            onMessage: { [unowned self] connection, query in
                let answering = resolve(
                    query, device: device, overTCP: true,
                    // No answer from the host's resolver: the device's connection ends, as a
                    // server's does, and it asks again.
                    unanswered: { [weak connection] in connection?.end() },
                    reply: { [weak connection] answer in connection?.send(answer) })
                if !answering { connection.end() }
            },
            onEnd: { [unowned self] connection in streams[ObjectIdentifier(connection)] = nil })
        streams[ObjectIdentifier(connection)] = (connection, device)
    }

    /// The first `nameserver` of /etc/resolv.conf, as the host's own programs use it; 127.0.0.1
    /// when it names none (as glibc does).
    static func hostResolver(path: String = "/etc/resolv.conf") -> SocketAddress {
        let text = (try? FileContents.read(path, maximumSize: 1 << 20)).map {
            String(decoding: $0.bytes, as: UTF8.self)
        }
        for line in (text ?? "").split(separator: "\n") {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard words.count >= 2, words[0] == "nameserver", let address = IPAddress(words[1]) else { continue }
            let host = address.isIPv4 ? address.description : "[\(address.description)]"
            if let socket = try? SocketAddress(parsing: "\(host):53") { return socket }
        }
        return try! SocketAddress(parsing: "127.0.0.1:53")
    }

    /// Answers `query` from `--hosts-file`, or forwards it to the host's resolver (over TCP when it
    /// came over TCP); `reply` gets the answer, or `unanswered` is told there will be none. Returns
    /// false when it will get none at once: a message that is not one query, or too many under way.
    private func resolve(
        _ query: [UInt8], device: IPAddress, overTCP: Bool, unanswered: @escaping () -> Void,
        reply: @escaping ([UInt8]) -> Void
    ) -> Bool {
        guard let question = DNSMessage.question(of: query) else { return false }
        if let listed = hosts?.addresses(for: question.name) {
            let addresses = listed.compactMap { IPAddress($0) }
            names.record(question.name, for: addresses, device: device)
            reply(DNSMessage.answer(to: query, question, addresses: addresses.map(\.networkBytes)))
            return true
        }
        guard pending.count < Self.maximumPending else { return false }
        let id = nextID
        nextID += 1
        let relay = { [unowned self] (answer: [UInt8]) in
            guard answer.count >= 2, UInt16(answer[0]) << 8 | UInt16(answer[1]) == question.id else { return false }
            if let (name, addresses) = DNSMessage.addresses(in: answer), !addresses.isEmpty {
                names.record(name, for: addresses.compactMap { IPAddress(networkBytes: $0) }, device: device)
            }
            reply(answer)
            pending[id]?.timer.cancel()
            pending[id] = nil
            return true
        }
        do {
            let timer = try EventLoop.Timer(base: base) { [unowned self] in forget(id) }
            let socket: AnyObject
            if overTCP {
                let exchange = TunnelResolverStream(
                    stream: try SocketStream(base: base, connectingTo: upstream), idleLimit: Self.timeout,
                    onMessage: { exchange, answer in
                        _ = relay(answer)
                        exchange.end()
                    },
                    onEnd: { [unowned self] _ in forget(id) })
                exchange.send(query)
                socket = exchange
            } else {
                let datagrams = try DatagramSocket(base: base, remote: upstream) { answer, _ in _ = relay(answer) }
                guard datagrams.send(query) else { return false }
                socket = datagrams
            }
            timer.schedule(after: Self.timeout)
            pending[id] = Pending(socket: socket, timer: timer, unanswered: unanswered)
            return true
        } catch {
            return false  // No socket: the device asks again.
        }
    }

    /// Drops unanswered query `id`'s socket and timer (timed out, or its connection ended), and
    /// says so. An answered one is gone already.
    private func forget(_ id: UInt64) {
        guard let entry = pending.removeValue(forKey: id) else { return }
        entry.timer.cancel()
        (entry.socket as? TunnelResolverStream)?.end()
        entry.unanswered()
    }

    /// Stops answering; queries under way are dropped.
    func close() {
        for id in Array(pending.keys) { forget(id) }
        for entry in Array(streams.values) { entry.connection.end() }
        server = nil
        streamServer = nil
    }
}
