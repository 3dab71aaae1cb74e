import ATSPolicy
import EventLoop
import Foundation
import TLSInspection

@testable import ProxyCore

/// The event loop of a scripted session: callbacks the streams owe are queued here, as a real
/// loop queues them, and run by ``run()`` once the test's step is done, so no callback ever runs
/// inside the method that caused it (the rule ``ByteStream`` promises).
final class Playbook {
    private var due: [() -> Void] = []

    func later(_ action: @escaping () -> Void) { due.append(action) }

    /// Runs everything owed, and what that causes, until nothing is left.
    func run() {
        var rounds = 0
        while !due.isEmpty {
            let now = due
            due = []
            for action in now { action() }
            rounds += 1
            precondition(rounds < 10_000, "the scripted loop does not settle")
        }
    }
}

/// A byte stream whose peer is the test: what the peer sends waits "in the kernel" until the
/// session reads (reading on), what the session writes waits in the output until the peer takes it
/// (``peerTakes(all:)``, or at once with ``takesEverything``), and ends travel the same way.
final class ScriptedStream: ByteStream {
    let name: String
    private let playbook: Playbook
    /// What the peer sent that the session has not read yet (the socket's receive queue).
    private var kernel: [UInt8] = []
    private var peerEnded = false
    private var endDelivered = false
    /// The error the peer's connection failed with (a reset: ECONNRESET), reported after its bytes.
    private var peerFailure: Int32?
    private var input: [UInt8] = []
    private var output: [UInt8] = []
    /// Everything the peer has taken from the session, in order.
    private(set) var delivered: [UInt8] = []
    /// Whether the session sent its end (shutdownWrite, close, or reset).
    private(set) var sentEnd = false
    /// Whether the session ended the stream with a reset (``reset()``) rather than a clean close.
    private(set) var wasReset = false
    private(set) var isOpen = true
    private(set) var isReading = true
    /// Whether the peer takes what is written at once; off, it waits for ``peerTakes(all:)``.
    var takesEverything = true
    private var drainedMark = 0
    private var drainedArmed = false
    private(set) var readLimit: Duration?
    private(set) var writeLimit: Duration?
    private(set) var lastActivity = MonotonicClock.nowMilliseconds()

    var onReadable: ((any ByteStream) -> Void)?
    var onDrained: ((any ByteStream) -> Void)?
    var onEvent: ((any ByteStream, StreamEvent) -> Void)?
    /// The test's look at the world as the session writes to this stream, before the bytes land.
    var onWrite: (() -> Void)?

    init(_ name: String, playbook: Playbook) {
        self.name = name
        self.playbook = playbook
    }

    // MARK: The test's side

    /// The peer sends `bytes`; read (and ``onReadable`` called, from the loop) while reading is on.
    func peerSends(_ bytes: [UInt8]) {
        kernel += bytes
        deliverInput()
    }

    func peerSends(_ text: String) { peerSends(Array(text.utf8)) }

    /// The peer sends its FIN, after what it sent before.
    func peerEnds() {
        peerEnded = true
        deliverInput()
    }

    /// The peer's connection fails with `code` (ECONNRESET: it reset the connection), after what
    /// it sent before: as a socket's read finds the data, then the error.
    func peerFails(_ code: Int32) {
        peerFailure = code
        deliverInput()
    }

    /// The peer takes what waits in the output (all of it, or `count` bytes).
    func peerTakes(_ count: Int = .max) {
        let taken = min(count, output.count)
        delivered += output.prefix(taken)
        output.removeFirst(taken)
        if taken > 0 { lastActivity = MonotonicClock.nowMilliseconds() }
        noteDrained()
    }

    var deliveredText: String { String(decoding: delivered, as: UTF8.self) }

    /// The read limit the session set passes (as a socket's read event times out): reported while
    /// reading is on and a limit is set. Returns whether it was.
    @discardableResult
    func readLimitPasses() -> Bool {
        guard isOpen, isReading, readLimit != nil else { return false }
        isReading = false
        playbook.later { [weak self] in
            guard let self, isOpen else { return }
            onEvent?(self, .timeout)
        }
        return true
    }

    /// The write limit the session set passes with bytes still waiting for the peer (as a socket's
    /// write event times out). Returns whether it did.
    @discardableResult
    func writeLimitPasses() -> Bool {
        guard isOpen, writeLimit != nil, !output.isEmpty else { return false }
        playbook.later { [weak self] in
            guard let self, isOpen else { return }
            onEvent?(self, .timeout)
        }
        return true
    }

    private func deliverInput() {
        guard isOpen, isReading else { return }
        if !kernel.isEmpty {
            input += kernel
            kernel = []
            lastActivity = MonotonicClock.nowMilliseconds()
            playbook.later { [weak self] in
                // A stream that stopped reading meanwhile calls nothing, as a disarmed read event.
                guard let self, isOpen, isReading, availableBytes > 0 else { return }
                onReadable?(self)
            }
        }
        if let code = peerFailure, !endDelivered {
            endDelivered = true
            playbook.later { [weak self] in
                guard let self, isOpen else { return }
                isReading = false
                onEvent?(self, .error(code))
            }
        } else if peerEnded, !endDelivered {
            // As a socket's read finds the data, then the end: reading stops when the end is reported.
            endDelivered = true
            playbook.later { [weak self] in
                guard let self, isOpen else { return }
                isReading = false
                onEvent?(self, .endOfStream)
            }
        }
    }

    private func noteDrained() {
        guard drainedArmed, output.count <= drainedMark else { return }
        drainedArmed = false
        playbook.later { [weak self] in
            guard let self, isOpen else { return }
            onDrained?(self)
        }
    }

    // MARK: ByteStream

    var availableBytes: Int { input.count }
    var pendingOutputBytes: Int { output.count }
    var hasBytesWaiting: Bool { !output.isEmpty }

    func read(maximum: Int) -> [UInt8] {
        let taken = Array(input.prefix(maximum))
        input.removeFirst(taken.count)
        return taken
    }

    func peek(maximum: Int) -> [UInt8] { Array(input.prefix(maximum)) }

    func discardInput(_ count: Int) { input.removeFirst(min(count, input.count)) }

    func write(_ bytes: [UInt8]) {
        guard isOpen, !sentEnd else { return }
        onWrite?()
        output += bytes
        if takesEverything { peerTakes() }
    }

    func moveInput(to other: any ByteStream) { other.write(read(maximum: .max)) }

    func moveInput(to other: any ByteStream, maximum: Int) -> Int {
        let bytes = read(maximum: maximum)
        other.write(bytes)
        return bytes.count
    }

    func takeInput(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let count = min(buffer.count, input.count)
        buffer.copyBytes(from: input.prefix(count))
        input.removeFirst(count)
        return count
    }

    func queue(_ bytes: UnsafeRawBufferPointer) {
        guard isOpen, !sentEnd else { return }
        onWrite?()
        output += bytes
    }

    func flush() {
        if takesEverything { peerTakes() }
    }

    var inputEnded: Bool { endDelivered && peerFailure == nil }
    var inputEndedCleanly: Bool { inputEnded }

    func noteReadable() {
        playbook.later { [weak self] in
            guard let self, isOpen else { return }
            onReadable?(self)
        }
    }

    func setReading(_ enabled: Bool) {
        guard isOpen, !(enabled && endDelivered) else { return }
        isReading = enabled
        if enabled { deliverInput() }
    }

    func readImmediately() {
        guard isOpen, isReading, !kernel.isEmpty else { return }
        input += kernel
        kernel = []
    }

    func setDrainedMark(_ low: Int) {
        drainedMark = low
        drainedArmed = true
        noteDrained()
    }

    func setTimeouts(read: Duration?, write: Duration?) {
        readLimit = read
        writeLimit = write
    }

    func shutdownWrite() { sentEnd = true }

    func close() {
        guard isOpen else { return }
        isOpen = false
        sentEnd = true
        onReadable = nil
        onDrained = nil
        onEvent = nil
    }

    /// As a socket's abortive close: what the peer has not taken is lost.
    func reset() {
        guard isOpen else { return }
        wasReset = true
        close()
    }
}

/// The proxy around a scripted session: dials and verdicts wait for the test to answer them; the
/// log is kept in memory.
final class ScriptedEnvironment: SessionEnvironment {
    var settings: ProxySettings
    /// The session's time: it moves only when the test advances it (``ScriptedClock/advance(by:)``).
    let scriptedClock = ScriptedClock()
    var clock: any SessionClock { scriptedClock }
    let listeningAddresses: [SocketAddress] = []
    var isDraining = false
    let playbook = Playbook()
    /// The idle watches sessions made, the latest last: the test fires them in the clock's place.
    private(set) var idleWatches: [ScriptedIdleWatch] = []
    /// The one-shot timers sessions made, the latest last: the test fires them in the clock's place.
    private(set) var timers: [ScriptedTimer] = []
    private(set) var records: [ConnectionRecord] = []
    private(set) var ended: [UInt64] = []
    /// The sessions started, kept as the proxy keeps them (their callbacks hold them unowned).
    private(set) var sessions: [ClientSession] = []

    /// A dial the test answers with ``connect(_:address:)`` or ``fail(_:)``.
    final class Dial: UpstreamDial {
        let host: String
        let port: UInt16
        let address: SocketAddress?
        fileprivate var completion: ((Result<(any ByteStream, SocketAddress), UpstreamDialer.DialFailure>) -> Void)?
        private let playbook: Playbook

        fileprivate init(host: String, port: UInt16, address: SocketAddress?, playbook: Playbook) {
            self.host = host
            self.port = port
            self.address = address
            self.playbook = playbook
        }

        func cancel() { completion = nil }

        func connect(_ stream: ScriptedStream, address: SocketAddress) {
            guard let completion else { return }
            self.completion = nil
            playbook.later { completion(.success((stream, address))) }
        }
    }

    /// A verdict the test answers with ``answer(_:)``.
    final class VerdictRequest {
        let key: VerdictKey
        private let deliver: (ProbeResult) -> Void
        private let progress: ((ProbeProgress) -> Void)?
        private let playbook: Playbook

        fileprivate init(
            key: VerdictKey, progress: ((ProbeProgress) -> Void)?, deliver: @escaping (ProbeResult) -> Void,
            playbook: Playbook
        ) {
            self.key = key
            self.progress = progress
            self.deliver = deliver
            self.playbook = playbook
        }

        func answer(_ result: ProbeResult) { playbook.later { [deliver] in deliver(result) } }

        /// The probe reports how far it came, as a real one does to the session that started it.
        func progressed(_ step: ProbeProgress) { playbook.later { [progress] in progress?(step) } }
    }

    private(set) var dials: [Dial] = []
    private(set) var verdicts: [VerdictRequest] = []

    init(policyXML: String, mode: EnforcementMode = .enforce) throws {
        let policy = try PolicyLoader.load(
            bytes: Array("<plist version=\"1.0\"><dict>\(policyXML)</dict></plist>".utf8), file: "p.plist")
        settings = ProxySettings(policy: policy, mode: mode)
    }

    func makeIdleWatch() -> (any IdleWatch)? {
        let watch = ScriptedIdleWatch(playbook: playbook)
        idleWatches.append(watch)
        return watch
    }

    func dial(
        host: String, port: UInt16, address: SocketAddress?, rules: DestinationRules, hosts: HostsTable?,
        timeout: Duration,
        completion: @escaping (Result<(any ByteStream, SocketAddress), UpstreamDialer.DialFailure>) -> Void
    ) -> any UpstreamDial {
        let dial = Dial(host: host, port: port, address: address, playbook: playbook)
        dial.completion = completion
        dials.append(dial)
        return dial
    }

    func lookUpVerdict(
        _ key: VerdictKey, rules: DestinationRules, session: UInt64, progress: ((ProbeProgress) -> Void)?,
        deliver: @escaping (ProbeResult) -> Void
    ) {
        verdicts.append(VerdictRequest(key: key, progress: progress, deliver: deliver, playbook: playbook))
    }

    func log(_ record: ConnectionRecord) {
        writeHeldLines()
        records.append(record)
    }

    /// Lines waiting for their server-name check; the test ends the loop with `releaseAll()`.
    let linesAwaitingChecks = LinesAwaitingChecks()

    func log(_ record: ConnectionRecord, after check: ServerNameCheck) {
        linesAwaitingChecks.hold(record, until: check) { [unowned self] in log($0) }
    }

    /// Name lookups the test answers (a captured connection's server-name check), in order.
    private(set) var lookups: [(host: String, answer: (Result<[SocketAddress], AddressLookupError>) -> Void)] = []

    func lookUpAddresses(
        _ host: String, port: UInt16, completion: @escaping (Result<[SocketAddress], AddressLookupError>) -> Void
    ) -> AddressLookup? {
        lookups.append((host, { [playbook] result in playbook.later { completion(result) } }))
        return AddressLookup()
    }

    /// Tunnels that began relaying, as the live view hears of them.
    var opened: [ConnectionRecord] = []
    func noteOpened(_ record: ConnectionRecord) { opened.append(record) }

    func sessionEnded(_ id: UInt64) { ended.append(id) }

    /// A session for a client at `address` (loopback unless told) on `client`, started.
    func startSession(
        client: ScriptedStream, address: String = "127.0.0.1", capture: SessionCapture = .proxy
    ) -> ClientSession {
        let session = ClientSession(
            id: UInt64(sessions.count + 1), environment: self, client: client, peer: "\(address):50000",
            address: IPAddress(address), allowed: true, clientClass: .urlsession, capture: capture)
        sessions.append(session)
        session.start()
        playbook.run()
        return session
    }

    // MARK: Intercept mode

    /// Intercept mode's parts, once ``intercept(authority:trusting:)`` turned it on.
    private(set) var interceptService: InterceptService?
    private(set) var leafSource: (any LeafSource)?
    var upstreamSessions: UpstreamSessionCache? { nil }
    /// The roots the proxy's own upstream handshakes trust (as `--ca-file` gives them).
    private var originRoots: [X509Certificate] = []
    /// The request lines of intercepted connections, in order, as written.
    private(set) var requests: [RequestRecord] = []
    /// Request lines held for a later write (``logHeld(request:)``), as the loop's `LogBatch` holds them.
    private(set) var heldRequests: [RequestRecord] = []

    /// Turns intercept mode on: leaves minted by `authority` for the devices, the origins' chains
    /// trusted to `originRoots` (the user-installed kind, so no CT is asked of them).
    func intercept(authority: CertificateAuthority, trusting originRoots: [X509Certificate]) throws {
        let minter = try LeafMinter(authority: authority)
        interceptService = InterceptService(deviceContext: try TLSServerContext()) { LeafCache(minter: minter) }
        leafSource = LeafCache(minter: minter)
        self.originRoots = originRoots
        settings.intercept.mode = .intercept
    }

    func upstreamContext(for profile: ClientProfile) throws(TLSError) -> TLSClientContext {
        try TLSClientContext(profile: profile, anchors: TrustAnchors(systemRoots: false, userInstalled: originRoots))
    }
    func makeTimer(_ onFire: @escaping () -> Void) -> (any LoopTimer)? {
        let timer = ScriptedTimer(playbook: playbook, clock: scriptedClock, onFire: onFire)
        timers.append(timer)
        return timer
    }
    func log(request: RequestRecord) {
        writeHeldLines()
        requests.append(request)
    }
    func logHeld(request: RequestRecord) { heldRequests.append(request) }
    func writeHeldLines() {
        requests += heldRequests
        heldRequests = []
    }

    /// Time passes: the clock moves on by `duration`, every timer that falls due fires, and the
    /// loop runs what that causes. (Idle watches are the test's to fire: ``ScriptedIdleWatch``.)
    func advance(by duration: Duration) {
        scriptedClock.advance(by: duration)
        for timer in timers { timer.comeDue(by: scriptedClock.monotonicMilliseconds) }
        playbook.run()
    }
}

/// The test's clock: it starts at the real time and moves only by ``advance(by:)``.
final class ScriptedClock: SessionClock {
    private(set) var monotonicMilliseconds: Int64 = 1_000_000
    private(set) var wallMilliseconds = WallClock.nowMilliseconds()

    func advance(by duration: Duration) {
        monotonicMilliseconds += duration.milliseconds
        wallMilliseconds += duration.milliseconds
    }
}

/// A one-shot timer on the test's clock: ``comeDue()`` is its time passing.
final class ScriptedTimer: LoopTimer {
    private let playbook: Playbook
    private let clock: ScriptedClock
    private let onFire: () -> Void
    /// The delay it was last scheduled with, while it is armed.
    private(set) var armed: Duration?
    /// When it falls due on the clock, while it is armed.
    private var dueAt: Int64?

    init(playbook: Playbook, clock: ScriptedClock, onFire: @escaping () -> Void) {
        self.playbook = playbook
        self.clock = clock
        self.onFire = onFire
    }

    func schedule(after delay: Duration) {
        armed = delay
        dueAt = clock.monotonicMilliseconds + delay.milliseconds
    }

    func cancel() {
        armed = nil
        dueAt = nil
    }

    /// Fires if armed and due by `now` on the clock.
    func comeDue(by now: Int64) {
        guard let dueAt, dueAt <= now else { return }
        comeDue()
    }

    /// Its time passed: it fires if armed (from the loop, as a real timer does).
    func comeDue() {
        guard armed != nil else { return }
        armed = nil
        dueAt = nil
        playbook.later { [onFire] in onFire() }
    }
}

/// An idle watch on the test's clock: ``comeDue(_:)`` is the limit passing.
final class ScriptedIdleWatch: IdleWatch {
    private let playbook: Playbook
    private var onIdle: ((IdleTimer.Ending) -> Void)?
    private(set) var watched: [any ByteStream] = []

    init(playbook: Playbook) { self.playbook = playbook }

    var isWatching: Bool { onIdle != nil }

    func start(
        limit: Duration, stallLimit: Duration, watching streams: [any ByteStream],
        onIdle: @escaping (IdleTimer.Ending) -> Void
    ) {
        watched = streams
        self.onIdle = onIdle
    }

    func stop() {
        onIdle = nil
        watched = []
    }

    /// The limit passed with the streams as they are: idle, or stalled if bytes wait for a reader.
    func comeDue() {
        guard let onIdle else { return }
        self.onIdle = nil
        let ending: IdleTimer.Ending = watched.contains { $0.hasBytesWaiting } ? .stalled : .idle
        playbook.later { onIdle(ending) }
    }
}

/// Facts of a handshake that ATS accepts for `host` (TLS 1.3, a system root, an embedded SCT), or
/// with the certificate named for another host.
func compliantFacts(for host: String) -> ObservedConnection {
    let leaf = CertificateFacts(
        subject: "CN=\(host)", keyType: .ec, keyBits: 256, signatureAlgorithm: "ecdsa-with-SHA256",
        signatureHash: .sha256, notBefore: Int64(Date().timeIntervalSince1970) - 86_400,
        notAfter: Int64(Date().timeIntervalSince1970) + 30 * 86_400, dnsNames: [host])
    return ObservedConnection(
        tlsVersion: .tls13, cipherSuite: CipherSuite(id: 0x1301), chain: [leaf], trust: .systemRoot,
        embeddedSCTs: 3, evaluationTime: Int64(Date().timeIntervalSince1970))
}
