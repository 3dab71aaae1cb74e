import EventLoop
import TLSInspection

/// Resolves an upstream's name and connects to its addresses in order, each within the connect
/// timeout: the one way the proxy reaches a server, so the address a probe judged is the address a
/// tunnel then uses (``connect(to:port:timeout:base:completion:)``).
///
/// Names come from `--hosts-file` first (read once per load, shared by every loop), then from the
/// loop's resolver (/etc/hosts, then DNS). Loop-confined; ``cancel()`` before dropping it stops
/// the lookup or the connect under way, and the completion then never runs.
final class UpstreamDialer {
    /// A connected socket and the address it reached, or why none could be reached.
    typealias Completion = (Result<(Connection, SocketAddress), ProbeFailure>) -> Void

    private let base: EventBase
    private let resolver: DNSResolver
    private let hosts: HostsTable?
    private let timeout: Duration
    private var state = State.idle

    private enum State {
        case idle
        case resolving(AddressLookup)
        case connecting(Connection)
        case done
    }

    init(base: EventBase, resolver: DNSResolver, hosts: HostsTable?, timeout: Duration) {
        self.base = base
        self.resolver = resolver
        self.hosts = hosts
        self.timeout = timeout
    }

    /// Resolves `host` and connects to its first address that accepts.
    func dial(host: String, port: UInt16, completion: @escaping Completion) {
        if let listed = hosts?.addresses(for: host) {
            let addresses = listed.compactMap { try? SocketAddress(parsing: $0.contains(":") ? "[\($0)]:\(port)" : "\($0):\(port)") }
            return connect(host: host, port: port, addresses: addresses[...], lastError: "no address", completion: completion)
        }
        let lookup = resolver.lookUp(host, port: port) { [unowned self] result in
            switch result {
            case .success(let addresses):
                connect(host: host, port: port, addresses: addresses[...], lastError: "no address", completion: completion)
            case .failure(let error):
                state = .done
                completion(.failure(.resolve(host: host, reason: error.reason)))
            }
        }
        if case .idle = state { state = .resolving(lookup) }
    }

    /// Connects to `address` only: the one a verdict was about.
    func connect(to address: SocketAddress, host: String, completion: @escaping Completion) {
        connect(host: host, port: address.port, addresses: [address][...], lastError: "no address", completion: completion)
    }

    /// Stops what is under way; the completion will not run.
    func cancel() {
        switch state {
        case .resolving(let lookup): lookup.cancel()
        case .connecting(let connection): connection.close()
        case .idle, .done: break
        }
        state = .done
    }

    private func connect(
        host: String, port: UInt16, addresses: ArraySlice<SocketAddress>, lastError: String, completion: @escaping Completion
    ) {
        guard let address = addresses.first else {
            state = .done
            return completion(.failure(.connect(host: host, port: port, reason: lastError)))
        }
        let connection: Connection
        do {
            connection = try Connection(base: base, connectingTo: address)
        } catch {
            state = .done
            return completion(.failure(.connect(host: host, port: port, reason: error.description)))
        }
        state = .connecting(connection)
        connection.setReading(false)
        connection.setTimeouts(read: nil, write: timeout)
        connection.onEvent = { [unowned self] connection, event in
            guard event == .connected else {
                connection.close()
                let reason = event == .timeout ? "the connection did not open within \(timeout.logText)" : event.description
                return connect(
                    host: host, port: port, addresses: addresses.dropFirst(), lastError: "\(address): \(reason)",
                    completion: completion)
            }
            connection.onEvent = nil
            connection.setTimeouts(read: nil, write: nil)
            state = .done
            completion(.success((connection, address)))
        }
    }
}
