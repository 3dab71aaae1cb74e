import ATSPolicy
import EventLoop
import ProxyWire
import TLSInspection

/// What a CONNECT tunnel (``ConnectTunnel``, and intercept mode's ``InterceptedTunnel`` through it)
/// needs of the session that owns it: the only part of the session it sees, as
/// ``ExchangeOwner`` is for a plain-HTTP exchange. The tunnel keeps what it finds in its own
/// ``TunnelFindings``; the session folds them into the log record. ``ClientSession`` is the owner.
protocol TunnelOwner: AnyObject {
    /// The device's connection (the session owns it and its callbacks, which reach the tunnel as
    /// a ``ClientBytesHandler``; the tunnel reads and writes it).
    var client: any ByteStream { get }
    /// The settings the session started with.
    var settings: ProxySettings { get }
    /// The loop's services: timers, intercept mode's parts, the log of intercepted requests.
    var environment: any SessionEnvironment { get }
    /// Where this client may be connected.
    var destinations: DestinationRules { get }
    /// The client's address, as refusals and passthrough name it.
    var clientAddress: String { get }
    /// The client's address and port, as the log names it.
    var peer: String { get }
    /// The WireGuard peer the client is, as the log names it (nil: not one).
    var device: String? { get }
    /// The session's number: the log's `connection_id`.
    var id: UInt64 { get }

    /// The policy's requirements for `host` under this session's client class.
    func lookUpRequirements(for host: String, scheme: URLScheme) throws(HostIdentity.ParseFailure) -> Requirements
    /// Looks the verdict for `key` up; it comes back through ``ConnectTunnel/verdictArrived(_:for:)``.
    func lookUpVerdict(_ key: VerdictKey, progress: ((ProbeProgress) -> Void)?)
    /// Opens a connection upstream (the session cancels it if it ends first).
    func dial(
        host: String, port: UInt16, address: SocketAddress?,
        completion: @escaping (Result<(any ByteStream, SocketAddress), UpstreamDialer.DialFailure>) -> Void)
    /// What ``ConnectionJudge`` decides for `verdict` at `point`, under the session's settings.
    func decide(_ verdict: Verdict, at point: ConnectionJudge.Point) -> ConnectionJudge.Decision

    /// The log's timing: the verdict is known now; the upstream connection took this long; the 200 went now.
    func noteVerdictKnown()
    func noteConnected(took milliseconds: Int64)
    func noteEstablished()
    /// The tunnel is judged and relays: the live view may show it (with the findings so far).
    func tunnelOpened()

    /// Calls the tunnel's ``ClientBytesHandler/clientDrained()`` once the client's output falls to `mark`.
    func awaitClientDrained(to mark: Int)
    /// Watches `connections` for the idle and stall timeouts.
    func watchIdle(_ connections: [any ByteStream], onIdle: @escaping (IdleTimer.Ending) -> Void)
    /// Why an idle or stalled tunnel was closed.
    func closedReason(_ ending: IdleTimer.Ending) -> FailureReason

    /// Ends the tunnel with the proxy's own answer to the device (a 403, a 502, a TLS alert), then
    /// closes once it is written.
    func respond(_ bytes: [UInt8])
    /// Ends the tunnel with the proxy's answer: `http` to a CONNECT; to a captured TLS connection,
    /// whose device awaits a ServerHello and would read no HTTP, `alert` as a fatal alert, or a
    /// reset when nil (as a server that is not there). Then closes once it is written.
    func refuse(_ http: [UInt8], alert: TLSAlertDescription?)
    /// Ends the tunnel with a 403 naming a destination this client may not reach (a reset, to a
    /// captured TLS connection).
    func deny(_ refusal: DestinationRefusal)
    /// Ends the tunnel: both connections close, and the record is logged.
    func finish()
}

extension TunnelOwner {
    /// Looks the verdict for `key` up, with no ear for the probe's progress.
    func lookUpVerdict(_ key: VerdictKey) { lookUpVerdict(key, progress: nil) }
}
