import ArgumentParser
import ATSPolicy
import EventLoop
import Glibc
import ProxyCore
import TLSInspection

/// The running proxy: one event loop per thread, each with its own listeners on shared ports, all
/// sharing the policy, the probes and the verdict cache. The main thread only waits for signals.
final class Daemon {
    private let configuration: DaemonConfiguration
    /// Reads the config file and flags again: what a reload calls to pick up changed settings.
    private let resolveConfiguration: @Sendable () throws(ConfigurationError) -> DaemonConfiguration

    init(
        configuration: DaemonConfiguration,
        resolveConfiguration: @escaping @Sendable () throws(ConfigurationError) -> DaemonConfiguration
    ) {
        self.configuration = configuration
        self.resolveConfiguration = resolveConfiguration
    }

    func run() throws {
        // Block the stop signals everywhere before any thread starts; the main thread takes them with
        // sigwait, so no handler runs in the middle of libevent or OpenSSL.
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        sigaddset(&stopSignals, SIGINT)
        sigaddset(&stopSignals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &stopSignals, nil)
        signal(SIGPIPE, SIG_IGN)

        let policy: TransportSecurityPolicy
        let policyDescription: String
        do { (policy, policyDescription) = try configuration.loadPolicy() } catch {
            throw configuration.unusableFile(.policy, error)
        }
        let anchors: TrustAnchors
        do {
            anchors = try configuration.trustAnchors()
        } catch {
            throw configuration.unusableFile(.caFile, error)
        }
        let log: LogWriter
        if let path = configuration.logFile {
            do { log = try LogWriter(path: path) } catch { throw configuration.unusableFile(.logFile, error) }
        } else {
            log = LogWriter()
        }
        let settings = configuration.proxySettings(policy: policy)
        let hosts: HostsTable?
        do { hosts = try configuration.hostsTable() } catch { throw configuration.unusableFile(.hostsFile, error) }
        let hostsFile = configuration.hostsFile
        let probes = ProbeService(anchors: anchors, hosts: hosts)
        let cache = VerdictCache<VerdictKey, ProbeReport>(
            timeToLiveMilliseconds: configuration.verdictTTL.components.seconds * 1000)
        var endpoints = configuration.listeners
        let threadCount = configuration.threads

        var loops: [EventLoopThread] = []
        var bound: [String] = []
        for _ in 0..<threadCount {
            do {
                let (loop, addresses) = try EventLoopThread.start { [endpoints] base in
                    let resolver = try DNSResolver(base: base, hostsFile: hostsFile)
                    let server = try ProxyServer(
                        base: base, endpoints: endpoints, sharedPorts: threadCount > 1, settings: settings, probes: probes,
                        cache: cache, log: log, resolver: resolver)
                    return (keepAlive: server, info: server.addresses)
                }
                loops.append(loop)
                // Port 0 is chosen by the kernel once; the other loops share that port.
                for index in endpoints.indices { endpoints[index].address = addresses[index] }
                bound = addresses.map(\.description)
            } catch {
                for loop in loops { loop.stop() }
                throw ValidationError("cannot start: \(error)")
            }
        }
        Daemon.say(
            "atsproxy listening on \(bound.joined(separator: ", ")) with \(threadCount) thread\(threadCount == 1 ? "" : "s"), "
                + "\(configuration.mode.rawValue) mode, policy \(policyDescription), "
                + "\(policy.settings.osProfile.rawValue) profile")
        // Only now, with every listener bound, may systemd start what depends on the proxy.
        let systemd = SystemdNotifier.fromEnvironment()
        let summary = "listening on \(bound.joined(separator: ", ")); \(configuration.mode.rawValue) mode; policy \(policyDescription)"
        Daemon.tell(systemd, .ready, .status(summary))

        var received: Int32 = 0
        sigwait(&stopSignals, &received)
        Daemon.tell(systemd, .stopping, .status("stopping (signal \(received))"))
        Daemon.say("atsproxy stopping (signal \(received))")
        for loop in loops { loop.stop() }
    }

    /// Sends an sd_notify message; a failure is said on stderr and otherwise ignored, since the proxy
    /// serves its clients whether or not systemd hears about it.
    static func tell(_ systemd: SystemdNotifier, _ fields: SystemdNotifier.Field...) {
        do { try systemd.notify(fields) } catch { say("atsproxy: cannot notify systemd: \(error)") }
    }

    /// Operational messages go to stderr; stdout carries the JSON log.
    static func say(_ message: String) {
        var line = Array((message + "\n").utf8)
        _ = line.withUnsafeMutableBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}
