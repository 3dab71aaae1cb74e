import ATSPolicy
import EventLoop
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
/// On the daemon's main thread. At most ``maximumPending`` queries wait for the host's resolver,
/// each for ``timeout``; a query beyond them, or unparsable, is dropped (the device asks again).
final class TunnelResolver {
    static let maximumPending = 256
    static let timeout: Duration = .seconds(5)

    private struct Pending {
        let socket: DatagramSocket
        let timer: EventLoop.Timer
    }

    private let base: EventBase
    private var server: DatagramSocket?
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
        server = try DatagramSocket(
            base: base, local: try SocketAddress(parsing: "\(WireGuardNetwork.proxyAddress):53")
        ) { [unowned self] bytes, client in query(bytes, from: client) }
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

    private func query(_ bytes: [UInt8], from client: SocketAddress) {
        // The devices only: WireGuard vouches for their addresses. Anyone else who routes a query
        // here (a LAN host with a route to the tunnel's network) gets nothing, so this is no open
        // resolver for the host's network.
        guard let address = client.withAddressBytes({ IPAddress(networkBytes: $0) }),
            WireGuardSettings.network.contains(address.unmapped)
        else { return }
        guard let question = DNSMessage.question(of: bytes) else { return }
        if let listed = hosts?.addresses(for: question.name) {
            let addresses = listed.compactMap { IPAddress($0) }
            names.record(question.name, for: addresses, device: address)
            server?.send(
                DNSMessage.answer(to: bytes, question, addresses: addresses.map(\.networkBytes)), to: client)
            return
        }
        guard pending.count < Self.maximumPending else { return }
        let id = nextID
        nextID += 1
        do {
            let socket = try DatagramSocket(base: base, remote: upstream) { [unowned self] answer, _ in
                relay(answer, id: id, queryID: question.id, to: client, device: address)
            }
            let timer = try EventLoop.Timer(base: base) { [unowned self] in pending[id] = nil }
            timer.schedule(after: Self.timeout)
            guard socket.send(bytes) else { return }
            pending[id] = Pending(socket: socket, timer: timer)
        } catch {
            return  // No socket: the device asks again.
        }
    }

    private func relay(_ answer: [UInt8], id: UInt64, queryID: UInt16, to client: SocketAddress, device: IPAddress) {
        guard answer.count >= 2, UInt16(answer[0]) << 8 | UInt16(answer[1]) == queryID else { return }
        if let (name, addresses) = DNSMessage.addresses(in: answer), !addresses.isEmpty {
            names.record(name, for: addresses.compactMap { IPAddress(networkBytes: $0) }, device: device)
        }
        server?.send(answer, to: client)
        pending[id]?.timer.cancel()
        pending[id] = nil
    }

    /// Stops answering; queries under way are dropped.
    func close() {
        for entry in pending.values { entry.timer.cancel() }
        pending.removeAll()
        server = nil
    }
}
