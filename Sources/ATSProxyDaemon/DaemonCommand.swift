import ArgumentParser
import ATSPolicy
import ATSPolicyArguments
import EventLoop
import Glibc
import ProxyCore
import TLSInspection

extension EnforcementMode: ExpressibleByArgument {}

/// `atsproxy`: the proxy daemon, in the foreground (systemd style), logging one JSON line per
/// connection to stdout or a file.
public struct DaemonCommand: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "atsproxy",
        abstract: "An HTTPS proxy that judges every connection by App Transport Security, as an iPhone app would.",
        discussion: """
            Point a device, emulator or simulator at the proxy (HTTP proxy, CONNECT for https). Each connection \
            is judged against the policy (an app Info.plist or its NSAppTransportSecurity dictionary); in \
            enforce mode non-compliant ones get 403 with the violations, in report mode they pass and are logged.
            """)

    @Option(name: .customLong("listen"), help: "Address to accept clients on, ADDR:PORT (repeatable).")
    var listen: [String] = ["127.0.0.1:8080"]

    @Option(help: "The policy: an app Info.plist or an NSAppTransportSecurity plist (default: the ATS defaults).")
    var policy: String?

    @Option(help: "enforce (block non-compliant connections) or report (log them only).")
    public var mode: EnforcementMode = .enforce

    @Option(name: .customLong("ca-file"), help: "Extra trust anchors (PEM), treated as user-installed roots (repeatable).")
    var caFiles: [String] = []

    @Option(name: .customLong("system-roots"), help: "Trust the OS store as Apple's system roots: on or off.")
    var systemRoots: OnOff = .on

    @Option(name: .customLong("log-file"), help: "Append the JSON log here instead of standard output.")
    var logFile: String?

    @Option(name: .customLong("os-profile"), help: "iOS behaviour to model: ios9, ios10, ios17, ios26.")
    var osProfile: OSProfile = .ios17

    @Option(name: .customLong("cipher-profile"), help: "TLS 1.2 suites of the ATS client: current or documented.")
    var cipherProfile: CipherProfile = .current

    @Option(
        name: .customLong("client-class"),
        help: ArgumentHelp(
            "Which API the clients use: urlsession, webkit or media (default urlsession).",
            discussion: "Give one for every listener, or one per --listen in the same order."))
    var clientClasses: [ClientClass] = []

    @Option(
        name: .customLong("hosts-file"),
        help: "Names to addresses in /etc/hosts format, consulted before /etc/hosts and DNS.")
    var hostsFile: String?

    @Option(name: .customLong("allow-client"), help: "A CIDR range of clients allowed to connect (repeatable; default loopback).")
    var allowClients: [String] = []

    @Option(name: .customLong("verdict-ttl"), help: "Seconds a probe result is reused.")
    var verdictTTL: Int = 300

    @Option(help: "Event-loop threads (default: the number of cores).")
    var threads: Int?

    public init() {}

    /// The `--listen` values, for tests and the start-up line.
    public var listenAddresses: [String] { listen }
    /// The `--policy` value.
    public var policyPath: String? { policy }

    public enum OnOff: String, ExpressibleByArgument, Sendable {
        case on, off
    }

    public func validate() throws {
        guard verdictTTL >= 0 else { throw ValidationError("--verdict-ttl must be 0 or more seconds") }
        if let threads, !(1...256).contains(threads) { throw ValidationError("--threads must be between 1 and 256") }
        for text in listen {
            do { _ = try SocketAddress(parsing: text) } catch { throw ValidationError("--listen \(text): not ADDR:PORT") }
        }
        guard clientClasses.count <= 1 || clientClasses.count == listen.count else {
            throw ValidationError(
                "--client-class was given \(clientClasses.count) times for \(listen.count) --listen addresses: "
                    + "give it once for all, or once per --listen in the same order")
        }
        for text in allowClients {
            do { _ = try AddressRange(parsing: text) } catch { throw ValidationError("--allow-client \(text): \(error)") }
        }
    }

    public func run() throws {
        let daemon = try Daemon(configuration: self)
        try daemon.run()
    }

    // MARK: - What the flags mean

    /// The client class of listeners that do not name their own.
    var clientClass: ClientClass { clientClasses.count == 1 ? clientClasses[0] : .urlsession }

    func policySettings() -> PolicySettings {
        PolicySettings(osProfile: osProfile, cipherProfile: cipherProfile, clientClass: clientClass)
    }

    /// The listeners, each with its client class.
    func endpoints() throws -> [ListenEndpoint] {
        try listen.enumerated().map { index, text in
            let address: SocketAddress
            do { address = try SocketAddress(parsing: text) } catch { throw ValidationError("--listen \(text): \(error)") }
            return ListenEndpoint(address: address, clientClass: clientClasses.count > 1 ? clientClasses[index] : clientClass)
        }
    }

    func hostsTable() throws -> HostsTable? {
        guard let hostsFile else { return nil }
        do { return try HostsTable.load(path: hostsFile) } catch { throw ValidationError("--hosts-file \(error)") }
    }

    func loadPolicy() throws -> (policy: TransportSecurityPolicy, description: String) {
        guard let policy else {
            return (TransportSecurityPolicy(settings: policySettings()), "the ATS defaults")
        }
        do {
            let loaded = try PolicyLoader.load(path: policy, settings: policySettings())
            return (loaded.policy, "\(loaded.path) (sha256 \(loaded.sha256.prefix(12)))")
        } catch {
            throw ValidationError("cannot use the policy: \(error)")
        }
    }

    func allowedClients() throws -> [AddressRange] {
        guard !allowClients.isEmpty else { return ProxySettings.loopback }
        return try allowClients.map { try AddressRange(parsing: $0) }
    }

    var threadCount: Int { threads ?? max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
}

/// The daemon's entry point for the executable (ArgumentParser's `main()` with its exit codes).
public enum DaemonMain {
    public static func main() { DaemonCommand.main() }
}
