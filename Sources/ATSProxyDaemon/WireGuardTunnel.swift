import ATSPolicy
import EventLoop
import Glibc
import POSIX
import ProxyCore
import WireGuard

/// `--wireguard-listen`'s tunnel: the interface, the WireGuard that runs it, its configuration and
/// its nftables table, from start to stop. Confined to the daemon's main thread.
///
/// The kernel's WireGuard is used where the kernel has it; otherwise Debian's `wireguard-go` runs
/// the interface on a TUN device, as a child the daemon supervises: started in the foreground,
/// restarted (and configured again) when it dies, stopped with the daemon. `wg` configures either
/// the same way; `ip` gives the interface its address; `nft` applies ``WireGuardRules``.
final class WireGuardTunnel {
    /// What runs the interface.
    enum Engine: Equatable {
        case kernel
        case userspace(pid: pid_t)
        /// wireguard-go died and is to be started again (``restartTimer``).
        case restarting
        case stopped
    }

    let settings: WireGuardSettings
    private(set) var engine = Engine.stopped
    /// When the running wireguard-go started, to back off when it keeps dying at once.
    private var startedAt: Int64 = 0
    private var restartDelay: Duration = .seconds(1)
    private var restartTimer: EventLoop.Timer?
    /// The proxy's key, read (or made) at start.
    private var serverKey: WireGuardKey?
    /// The devices the last start or reload gave WireGuard: what a restart configures.
    private var applied: [WireGuardDevice] = []
    /// Set by ``beginStopping()`` and ``stop()``: wireguard-go ending now is not restarted.
    private var stopping = false
    /// Set by ``stop()``: the rules and the interface are gone (wireguard-go may have ended before,
    /// when systemd's stop signalled the whole group, and its table is still to delete).
    private var tornDown = false
    private let base: EventBase
    /// Called with the devices each time the tunnel is configured (start, restart, reload).
    private let onDevices: ([WireGuardDevice]) -> Void

    init(settings: WireGuardSettings, base: EventBase, onDevices: @escaping ([WireGuardDevice]) -> Void) {
        self.settings = settings
        self.base = base
        self.onDevices = onDevices
    }

    var interface: String { settings.interface }

    /// What runs the tunnel, as `status` names it: `kernel`, `wireguard-go`, `restarting`, `stopped`.
    var engineName: String {
        switch engine {
        case .kernel: "kernel"
        case .userspace: "wireguard-go"
        case .restarting: "restarting"
        case .stopped: "stopped"
        }
    }

    /// wireguard-go's pid while it runs.
    var wireguardGoPID: pid_t? { if case .userspace(let pid) = engine { pid } else { nil } }

    /// Makes the interface and configures it; the proxy's listener in the tunnel can bind once this
    /// returns.
    func start() throws(WireGuardTunnelError) {
        try takeBackLeftover()
        do {
            serverKey = try settings.directory.serverKey()
        } catch {
            throw WireGuardTunnelError(step: "reading the proxy's key", reason: "\(error)")
        }
        if (try? Subprocess.run(["ip", "link", "add", interface, "type", "wireguard"]))?.succeeded == true {
            engine = .kernel
        } else {
            try startUserspace()
        }
        do { try configure(devices: try loadDevices()) } catch {
            stop()  // Nothing left behind: no interface, no wireguard-go, no table.
            throw error
        }
    }

    /// The alias that marks an interface as this daemon's (`ip link set … alias`).
    static let alias = "atsproxy --wireguard-listen"

    /// An interface of this name left by a daemon that was killed is ours to take back; any other
    /// (the administrator's own wg0, eth0) is refused, never deleted.
    private func takeBackLeftover() throws(WireGuardTunnelError) {
        guard if_nametoindex(interface) != 0 else { return }
        let alias = (try? FileContents.read("/sys/class/net/\(interface)/ifalias", maximumSize: 4096))
            .map { String(decoding: $0.bytes, as: UTF8.self).split(separator: "\n").first.map(String.init) }
        guard alias == Self.alias else {
            throw WireGuardTunnelError(
                step: "making \(interface)",
                reason: "an interface of that name exists and is not one atsproxy made: choose another "
                    + "--wireguard-interface")
        }
        _ = try? Subprocess.run(["ip", "link", "delete", interface])
    }

    /// `wireguard-go -f`, and the wait for its interface and control socket.
    private func startUserspace() throws(WireGuardTunnelError) {
        let pid: pid_t
        // In the foreground as a child (WG_PROCESS_FOREGROUND, which -f sets too), without the
        // banner -f prints about the kernel module on every start.
        do {
            pid = try Subprocess.start(["wireguard-go", interface], environment: ["WG_PROCESS_FOREGROUND": "1"])
        } catch {
            throw WireGuardTunnelError(
                step: "starting wireguard-go (Debian's wireguard-go package)", reason: "\(error)")
        }
        engine = .userspace(pid: pid)
        startedAt = WallClock.nowMilliseconds()
        let socket = "/var/run/wireguard/\(interface).sock"
        // A few milliseconds as a rule; the child's death ends the wait at once.
        for _ in 0..<500 {
            if if_nametoindex(interface) != 0, access(socket, F_OK) == 0 { return }
            if Subprocess.reap(pid).ended {
                engine = .stopped
                throw WireGuardTunnelError(
                    step: "starting wireguard-go", reason: "it exited before making \(interface)")
            }
            usleep(10_000)
        }
        kill(pid, SIGTERM)
        Subprocess.wait(for: pid)
        engine = .stopped
        throw WireGuardTunnelError(step: "starting wireguard-go", reason: "no \(interface) after 5 s")
    }

    /// Keys, peers, address, link and rules: all that a new interface needs.
    private func configure(devices: [WireGuardDevice]) throws(WireGuardTunnelError) {
        try run(["ip", "link", "set", interface, "alias", Self.alias])
        try run(["wg", "setconf", interface, "/dev/stdin"], input: try serverConfiguration(devices))
        try run(["ip", "address", "replace", "\(WireGuardNetwork.proxyAddress)/24", "dev", interface])
        try run(["ip", "link", "set", interface, "up"])
        try run(
            ["nft", "-f", "-"],
            input: WireGuardRules(interface: interface, listenerPort: settings.listen.port).script)
        applied = devices
        onDevices(devices)
    }

    /// Gives WireGuard the keys of `devices` (``loadDevices()``), keeping the sessions of those that
    /// stay (`wg syncconf`): what a reload does after `add-device` or `remove-device`.
    func apply(_ devices: [WireGuardDevice]) throws(WireGuardTunnelError) {
        applied = devices
        onDevices(devices)
        guard engine != .stopped, engine != .restarting else { return }
        try run(["wg", "syncconf", interface, "/dev/stdin"], input: try serverConfiguration(devices))
    }

    /// SIGCHLD: when the child that ended is wireguard-go, it is started again after a pause that
    /// doubles while it keeps dying within a minute of its start.
    func childEnded() {
        guard case .userspace(let pid) = engine else { return }
        guard !stopping else {
            // The daemon is stopping: no new wireguard-go, and no signal later to a pid since reused.
            if Subprocess.reap(pid).ended { engine = .stopped }
            return
        }
        let (ended, status) = Subprocess.reap(pid)
        guard ended else { return }
        let lived = WallClock.nowMilliseconds() - startedAt
        restartDelay = lived > 60_000 ? .seconds(1) : min(restartDelay * 2, .seconds(60))
        engine = .restarting
        Daemon.say(
            "atsproxy: wireguard-go (\(interface)) ended (\(status.map { "exit status \($0)" } ?? "killed by a signal")); "
                + "starting it again in \(restartDelay.components.seconds) s")
        if restartTimer == nil {
            restartTimer = try? EventLoop.Timer(base: base) { [weak self] in self?.restart() }
        }
        restartTimer?.schedule(after: restartDelay)
    }

    private func restart() {
        guard engine == .restarting else { return }
        do {
            try takeBackLeftover()
            try startUserspace()
            // The devices the last start or reload applied: a file broken since waits for a reload,
            // which says what is wrong, instead of keeping the tunnel down.
            try configure(devices: applied)
            Daemon.say("atsproxy: wireguard-go (\(interface)) running again")
        } catch {
            Daemon.say("atsproxy: \(error)")
            if case .userspace(let pid) = engine {
                kill(pid, SIGTERM)  // Its SIGCHLD schedules the next try.
            } else {
                engine = .restarting
                restartDelay = min(restartDelay * 2, .seconds(60))
                restartTimer?.schedule(after: restartDelay)
            }
        }
    }

    /// The daemon is stopping (its graceful drain): wireguard-go is no longer restarted.
    func beginStopping() { stopping = true }

    /// Deletes the rules and the interface (wireguard-go removes its own when it ends).
    func stop() {
        guard !tornDown else { return }
        tornDown = true
        stopping = true
        restartTimer?.cancel()
        _ = try? Subprocess.run(["nft", "-f", "-"], input: Array(WireGuardRules.deletion.utf8))
        switch engine {
        case .kernel:
            _ = try? Subprocess.run(["ip", "link", "delete", interface])
        case .userspace(let pid):
            kill(pid, SIGTERM)
            Subprocess.wait(for: pid)
        case .restarting, .stopped:
            break
        }
        engine = .stopped
    }

    // MARK: -

    /// The devices in the state directory, each file checked.
    func loadDevices() throws(WireGuardTunnelError) -> [WireGuardDevice] {
        do { return try settings.directory.devices() } catch {
            throw WireGuardTunnelError(step: "reading the devices", reason: "\(error)")
        }
    }

    /// With the key read at start: a key file removed since does not become a new key that no
    /// device knows.
    private func serverConfiguration(_ devices: [WireGuardDevice]) throws(WireGuardTunnelError) -> String {
        guard let serverKey else { throw WireGuardTunnelError(step: "configuring \(interface)", reason: "no key") }
        do {
            return try WireGuardServerConfiguration.text(
                privateKey: serverKey, listenPort: settings.listen.port, devices: devices)
        } catch {
            throw WireGuardTunnelError(step: "deriving the devices' public keys", reason: "\(error)")
        }
    }

    private func run(_ arguments: [String], input: String = "") throws(WireGuardTunnelError) {
        do { try Subprocess.check(arguments, input: Array(input.utf8)) } catch {
            throw WireGuardTunnelError(step: "configuring \(interface)", reason: "\(error)")
        }
    }
}

/// A step of setting up the WireGuard tunnel that failed, with what the tool said.
struct WireGuardTunnelError: Error, CustomStringConvertible {
    var step: String
    var reason: String
    var description: String { "WireGuard (--wireguard-listen): \(step): \(reason)" }
}
