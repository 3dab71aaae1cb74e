import EventLoop

/// A tunnel's own upstream connection, opened while its CONNECT's probe runs, to the address the
/// probe is connecting to: when the verdict allows that address, the `200` goes at once instead of
/// after a connect of its own, a round trip saved on every first connection to a host (make
/// bench-latency). Nothing is read from it or written to it before the verdict; a verdict that
/// blocks, or judges another address, closes it unused.
///
/// Opened just after the probe's connect is issued, so a server that accepts one connection at a
/// time usually serves the probe first. Not always: anything between that does not keep the order
/// of connections (a load balancer, a forwarder with a thread per connection) can hand the server
/// this one first, and the server then waits for a ClientHello that only the verdict releases,
/// while the probe waits behind it. So the connection is given up if, ``escapeDelay(connectTook:)``
/// after its opening, the server has answered neither the probe (``ProbeProgress/answered``) nor
/// been given the verdict (the tunnel then dials after the verdict, as it would have without it),
/// and before the probe connects again for its permissive handshake
/// (``ProbeProgress/explaining``), which would queue behind it the same way.
///
/// The single owner of its dial, its connection and its escape timer until ``whenOpen(_:)`` hands
/// the connection over; ``close()`` ends whichever it holds. Loop-confined.
final class EarlyUpstream {
    let address: SocketAddress
    private enum Phase {
        /// The dial is being started (it may end before it returns).
        case starting
        case dialing(any UpstreamDial)
        case open(any ByteStream)
        /// The dial failed, or the connection was given up: the tunnel dials for itself.
        case failed
        /// Handed over, or closed.
        case done
    }
    private var phase: Phase = .starting
    /// The verdict's wait for the dial (``whenOpen(_:)``).
    private var waiter: (((any ByteStream)?) -> Void)?
    private let environment: any SessionEnvironment
    private let began: Int64
    /// Whether the server has answered the probe (``probeAnswered()``).
    private var answered = false
    /// How long the connection took to open, in milliseconds (0 until it has).
    private(set) var connectTook: Int64 = 0
    /// Gives the open connection up when the verdict is late (see the type's comment).
    private var escape: (any LoopTimer)?

    /// Starts the connection to `address` through `environment`, vetted by `rules`.
    init(
        address: SocketAddress, host: String, environment: any SessionEnvironment, rules: DestinationRules,
        settings: ProxySettings
    ) {
        self.address = address
        self.environment = environment
        began = environment.clock.monotonicMilliseconds
        let dial = environment.dial(
            host: host, port: address.port, address: address, rules: rules, hosts: settings.hosts,
            timeout: settings.connectTimeout
        ) { [weak self] result in
            guard let self else {
                if case .success(let (connection, _)) = result { connection.close() }
                return
            }
            dialEnded(result)
        }
        // A dial may end before it returns (a refusal): then there is nothing to cancel.
        if case .starting = phase { phase = .dialing(dial) }
    }

    /// How long an open connection waits, while the server has not answered the probe, before it
    /// is given up: twice its own connect (about two round trips, the probe's handshake and its
    /// answer's journey, where the probe's connect went out just before it) and 250 ms, since a
    /// connect's time is no measure of the round trip where something near answers it for the
    /// server (a load balancer; the bench's delay relay). Once the probe is answered there is
    /// nothing to escape from, so a slow network does not give the connection up; a server that
    /// serves one connection at a time, served this one first, waits that long, once per host.
    static func escapeDelay(connectTook milliseconds: Int64) -> Duration {
        .milliseconds(2 * max(milliseconds, 0) + 250)
    }

    private func dialEnded(_ result: Result<(any ByteStream, SocketAddress), UpstreamDialer.DialFailure>) {
        switch result {
        case .success(let (connection, _)):
            switch phase {
            case .starting, .dialing: break
            case .open, .failed, .done: return connection.close()
            }
            connection.setReading(false)
            phase = .open(connection)
            connectTook = environment.clock.monotonicMilliseconds - began
            if waiter == nil, !answered {
                escape = environment.makeTimer { [unowned self] in giveUp() }
                escape?.schedule(after: Self.escapeDelay(connectTook: connectTook))
            }
        case .failure:
            phase = .failed
        }
        if let waiter {
            self.waiter = nil
            waiter(take())
        }
    }

    /// The server answered the probe: it is serving the probe's connection, not waiting on this
    /// one, so there is nothing to escape from.
    func probeAnswered() {
        answered = true
        escape?.cancel()
    }

    /// The verdict is late and the probe unanswered: the connection goes, and the tunnel will dial
    /// after the verdict.
    private func giveUp() {
        guard !answered else { return }
        if case .open(let connection) = phase {
            connection.close()
            phase = .failed
        }
    }

    /// Calls `body` with the connection once the dial has ended (at once if it has), handing it
    /// over; nil when it failed or was given up (the caller dials as it would have without it).
    func whenOpen(_ body: @escaping ((any ByteStream)?) -> Void) {
        switch phase {
        case .starting, .dialing: waiter = body
        case .open, .failed, .done: body(take())
        }
    }

    private func take() -> (any ByteStream)? {
        escape?.cancel()
        defer { phase = .done }
        if case .open(let connection) = phase { return connection }
        return nil
    }

    /// Gives up the dial or the connection, unless it was handed over. Idempotent.
    func close() {
        waiter = nil
        escape?.cancel()
        switch phase {
        case .dialing(let dial): dial.cancel()
        case .open(let connection): connection.close()
        case .starting, .failed, .done: break
        }
        phase = .done
    }
}
