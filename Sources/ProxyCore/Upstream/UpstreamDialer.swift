import EventLoop
import TLSInspection

/// Resolves an upstream's name and connects to its addresses in order, each within the connect
/// timeout: the one way the proxy reaches a server, so the address a probe judged is the address a
/// tunnel then uses (``connect(to:port:timeout:base:completion:)``).
///
/// Every address is vetted (``DestinationRules``) before any connects: a name with one refused
/// address is refused whole, not dialled at its others (a name that resolves to 127.0.0.1 beside a
/// public address is a rebinding attempt, not a server with a spare address).
///
/// Names come from `--hosts-file` first (``ProxySettings/hosts``: read once per load or reload,
/// shared by every loop), then from the loop's resolver (/etc/hosts, then DNS: the resolver does
/// not read the hosts file, so only a dial sees its names). Loop-confined; ``cancel()`` before
/// dropping it stops the lookup or the connect under way, and the completion then never runs.
final class UpstreamDialer {
    /// A connected socket and the address it reached, or why none could be reached.
    typealias Completion = (Result<(SocketStream, SocketAddress), DialFailure>) -> Void

    /// Why no connection was made.
    enum DialFailure: Error {
        /// The name did not resolve, or no address accepted (the reason names each address and what
        /// it did); `timedOut` when one of them did not answer within the connect timeout (a
        /// gateway timeout rather than a bad gateway).
        case unreachable(ProbeFailure, timedOut: Bool)
        /// An address is one this client may not reach: nothing was sent to any.
        case refused(DestinationRefusal)
    }

    private let base: EventBase
    private let resolver: DNSResolver
    private let hosts: HostsTable?
    /// Each connect's limit: the connect timeout, or less when a deadline leaves less.
    private var timeout: Duration
    private let vet: (SocketAddress) -> DestinationRefusal?
    /// How each connection is marked (``ProxySettings/upstreamMarking``).
    private let marking: UpstreamMarking?
    private var state = State.idle
    /// Told of each address as its connect is issued (the SYN is on its way): a tunnel dials its
    /// own connection then, queued behind the probe's at a server that accepts one at a time.
    var onConnecting: ((SocketAddress) -> Void)?

    private enum State {
        case idle
        case resolving(AddressLookup)
        case connecting(SocketStream)
        case done
    }

    /// - Parameter vet: why an address must not be reached (``DestinationRules/vet(_:)``), or nil.
    init(
        base: EventBase, resolver: DNSResolver, hosts: HostsTable?, timeout: Duration, marking: UpstreamMarking?,
        vet: @escaping (SocketAddress) -> DestinationRefusal?
    ) {
        self.marking = marking
        self.base = base
        self.vet = vet
        self.resolver = resolver
        self.hosts = hosts
        self.timeout = timeout
    }

    /// Resolves `host` and connects to its first address that accepts.
    func dial(host: String, port: UInt16, completion: @escaping Completion) {
        if let listed = hosts?.addresses(for: host) {
            let addresses = listed.compactMap {
                try? SocketAddress(parsing: $0.contains(":") ? "[\($0)]:\(port)" : "\($0):\(port)")
            }
            return vetAndConnect(host: host, port: port, addresses: addresses, completion: completion)
        }
        let lookup = resolver.lookUp(host, port: port) { [unowned self] result in
            switch result {
            case .success(let addresses):
                vetAndConnect(host: host, port: port, addresses: addresses, completion: completion)
            case .failure(let error):
                state = .done
                completion(.failure(.unreachable(.resolve(host: host, reason: error.reason), timedOut: false)))
            }
        }
        if case .idle = state { state = .resolving(lookup) }
    }

    /// Connects to `address` only: the one a verdict was about; within `limit` when a deadline
    /// leaves less than the connect timeout.
    func connect(
        to address: SocketAddress, host: String, within limit: Duration? = nil, completion: @escaping Completion
    ) {
        if let limit { timeout = min(timeout, limit) }
        vetAndConnect(host: host, port: address.port, addresses: [address], completion: completion)
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

    /// Refuses the whole name if any of its addresses is refused; otherwise connects to each in turn.
    private func vetAndConnect(host: String, port: UInt16, addresses: [SocketAddress], completion: @escaping Completion)
    {
        if let refusal = addresses.lazy.compactMap(vet).first {
            state = .done
            return completion(.failure(.refused(refusal)))
        }
        connect(host: host, port: port, addresses: addresses[...], errors: [], timedOut: false, completion: completion)
    }

    private func connect(
        host: String, port: UInt16, addresses: ArraySlice<SocketAddress>, errors: [String], timedOut: Bool,
        completion: @escaping Completion
    ) {
        guard let address = addresses.first else {
            state = .done
            let reason = errors.isEmpty ? "no address" : errors.joined(separator: "; ")
            return completion(
                .failure(.unreachable(.connect(host: host, port: port, reason: reason), timedOut: timedOut)))
        }
        let connection: SocketStream
        do {
            connection = try SocketStream(base: base, connectingTo: address, mark: marking?.mark)
        } catch {
            state = .done
            return completion(
                .failure(.unreachable(.connect(host: host, port: port, reason: error.description), timedOut: false)))
        }
        state = .connecting(connection)
        if let opening = marking?.opening, let local = connection.localAddress {
            // Listed until it closes, whoever then owns it.
            opening.insert(local: local, remote: address)
            connection.onClosed = { opening.remove(local: local, remote: address) }
        }
        onConnecting?(address)
        connection.setReading(false)
        connection.setTimeouts(read: nil, write: timeout)
        connection.onEvent = { [unowned self] _, event in
            guard event == .connected else {
                connection.close()
                let reason =
                    event == .timeout ? "the connection did not open within \(timeout.logText)" : event.description
                return connect(
                    host: host, port: port, addresses: addresses.dropFirst(),
                    errors: errors + ["\(address): \(reason)"],
                    timedOut: timedOut || event == .timeout, completion: completion)
            }
            connection.onEvent = nil
            connection.setTimeouts(read: nil, write: nil)
            state = .done
            completion(.success((connection, address)))
        }
    }
}
