import ATSPolicy
import ControlProtocol
import Dispatch
import EventLoop
import LiveView
import ProxyCore
import TLSInspection
import TextFormats
import WireGuard

/// What a reload did, for its caller (the control socket's answer), `status` and the log on stderr.
struct ReloadOutcome {
    enum Trigger: String {
        case controlSocket = "control socket"
        case hangUpSignal = "SIGHUP"
    }

    var trigger: Trigger
    var at: Int64
    /// Nil when the new settings were applied; else why the running ones stay.
    var failure: String?
    var previousSHA256: String?
    var policy: LoadedPolicy?
    var policyChanges = PolicyKeyChanges(from: nil, to: nil)
    /// Settings that changed and took effect.
    var applied: [ConfigKey] = []
    /// Settings that changed in the file but only take effect at the next start.
    var needsRestart: [ConfigKey] = []
    var droppedVerdicts = 0

    var succeeded: Bool { failure == nil }

    /// The new policy's warnings and errors (not its notes).
    var policyProblems: [Finding] { policy?.policy.findings.filter { $0.severity != .info } ?? [] }

    var json: JSONValue {
        var fields: [(String, JSONValue)] = [
            ("ok", .bool(succeeded)), ("command", .string(ControlCommand.reload.rawValue)),
            ("trigger", .string(trigger.rawValue)), ("at", .string(DateFormat.rfc3339(milliseconds: at))),
        ]
        if let failure {
            fields.append(("error", .string(failure)))
            fields.append(("kept", .string("the running policy and settings stay in force")))
            return .object(fields)
        }
        fields += [
            ("policy", policy?.json ?? .null),
            ("previous_sha256", .optional(previousSHA256)),
            ("policy_changed", .bool(policy?.file?.sha256 != previousSHA256)),
            ("policy_keys", policyChanges.json),
            ("settings_applied", .strings(applied.map(\.name))),
            ("needs_restart", .strings(needsRestart.map(\.name))),
            ("verdicts_dropped", .int(droppedVerdicts)),
            // What `atsproxyctl check` would warn of: a policy with mistakes is applied as iOS applies
            // it (a mistyped key is ignored), so the reload says what was ignored.
            ("policy_findings", .array(policyProblems.map(\.json))),
        ]
        return .object(fields)
    }

    /// One line for stderr (a SIGHUP has nobody else to tell).
    var summary: String {
        if let failure { return "atsproxy: reload (\(trigger.rawValue)) refused, the running policy stays: \(failure)" }
        var parts = ["policy \(policy?.description ?? "the ATS defaults")"]
        let keys = policyChanges.added.count + policyChanges.removed.count + policyChanges.changed.count
        parts.append(keys == 0 ? "no policy key changed" : "\(keys) policy key\(keys == 1 ? "" : "s") changed")
        if !applied.isEmpty { parts.append("applied " + applied.map(\.name).joined(separator: ", ")) }
        if !needsRestart.isEmpty {
            parts.append("restart needed for " + needsRestart.map(\.name).joined(separator: ", "))
        }
        let problems = policyProblems.count
        if problems > 0 { parts.append("\(problems) policy finding\(problems == 1 ? "" : "s"): run atsproxyctl check") }
        if droppedVerdicts > 0 {
            parts.append("\(droppedVerdicts) cached verdict\(droppedVerdicts == 1 ? "" : "s") dropped")
        }
        return "atsproxy: reloaded (\(trigger.rawValue)): " + parts.joined(separator: "; ")
    }
}

/// Reloading: the config file and the policy are read and checked in full before anything changes;
/// then the new settings go to every loop at once, for connections accepted from then on. Open
/// tunnels and requests keep the settings they started with, so a reload never cuts one.
extension Daemon {
    func reload(trigger: ReloadOutcome.Trigger) -> ReloadOutcome {
        tell(.reloading, .monotonicNow(), .status("reloading the config and the policy"))
        var outcome = ReloadOutcome(
            trigger: trigger, at: WallClock.nowMilliseconds(), previousSHA256: policy.file?.sha256)
        defer {
            lastReload = outcome
            reloads[ReloadResult(outcome), default: 0] += 1
            Daemon.say(outcome.summary)
            tell(.ready, .status(outcome.succeeded ? statusLine : "\(statusLine); last reload refused"))
        }
        var fresh: DaemonConfiguration
        do { fresh = try resolveConfiguration() } catch {
            outcome.failure = error.description
            return outcome
        }
        // Read again on every reload, as the hosts file is: a new token in the same file applies.
        do { try fresh.readWebTokenFile() } catch {
            outcome.failure = error.description
            return outcome
        }
        let loaded: LoadedPolicy
        do { loaded = try LoadedPolicy.load(fresh) } catch {
            outcome.failure = fresh.unusableFile(.policy, error).description
            return outcome
        }

        // Read again on every reload, changed path or not (an edited file keeps its name); a broken
        // one is refused like a broken policy, and the running table stays.
        let freshHosts: HostsTable?
        do { freshHosts = try fresh.hostsTable() } catch {
            outcome.failure = fresh.unusableFile(.hostsFile, error).description
            return outcome
        }

        // The WireGuard devices, read (and checked) before anything changes, given to WireGuard after.
        var devices: [WireGuardDevice]?
        if let wireguard {
            do { devices = try wireguard.loadDevices() } catch {
                outcome.failure = error.description
                return outcome
            }
        }

        // Intercept mode mints with the CA read at start: without one, turning it on is refused.
        if fresh.intercept.mode == .intercept, intercept == nil {
            let path = "\(configuration.caDir)/\(CertificateAuthority.certificateFileName)"
            outcome.failure =
                ConfigurationError(
                    .unusableFile, origin: fresh.origins[.inspect] ?? .commandLine, key: ConfigKey.inspect.name,
                    reason: "intercept mode needs the CA the daemon read at start, and there was none at \(path): "
                        + "run atsproxyctl ca init --dir \(configuration.caDir), then restart"
                ).description
            return outcome
        }

        outcome.policy = loaded
        outcome.policyChanges = PolicyKeyChanges(from: policy.file?.root, to: loaded.file?.root)

        // The restart-only settings keep their running values, so `status` tells the truth.
        var next = fresh
        next.keepRestartOnlySettings(of: configuration)
        // Judged on what will run, not on the file: a changed setting none of which could be taken
        // (client classes that do not pair with the running listeners) waits for the restart too.
        // The hosts file at the same path with other contents is a change too.
        outcome.applied = ConfigKey.allCases.filter {
            $0.takesEffectOnReload
                && (next.differs(from: configuration, in: $0) || ($0 == .hostsFile && freshHosts != hosts))
        }
        outcome.needsRestart = ConfigKey.allCases.filter {
            fresh.differs(from: configuration, in: $0) && !next.differs(from: configuration, in: $0)
        }
        configuration = next
        policy = loaded
        cache.timeToLive = next.verdictTTL.milliseconds
        // A smaller size evicts the least recently used verdicts down to it at once.
        cache.capacity = next.verdictCacheSize
        outcome.droppedVerdicts =
            dropVerdictsWithChangedRequirements(under: loaded.policy)
            + dropVerdictsWithChangedAddresses(from: hosts, to: freshHosts)
        hosts = freshHosts
        tunnelResolver?.hosts = freshHosts
        tunnelResolver?.upstream = TunnelResolver.hostResolver()
        if let wireguard, let devices {
            do { try wireguard.apply(devices) } catch { Daemon.say("atsproxy: \(error)") }
        }
        // The answer waits until every loop has the new settings: a client that connects once
        // `atsproxyctl reload` has returned is judged by them. A loop too busy to take them within
        // two seconds still takes them, a moment later.
        let applied = DispatchSemaphore(value: 0)
        onboarding = onboardingSite(for: next)
        web?.access = WebAccess(token: next.webToken)
        web?.limits = SiteConnection.Limits(headTimeout: next.headTimeout, idleTimeout: next.idleTimeout)
        webSite?.live.context = livePolicyContext
        broadcast(
            .settingsChanged(
                next.proxySettings(policy: loaded.policy, hosts: freshHosts, onboarding: onboarding),
                listenerClasses: next.listeners.map(\.clientClass),
                applied: { applied.signal() }))
        let deadline = DispatchTime.now() + .seconds(2)
        for _ in loops {
            guard applied.wait(timeout: deadline) == .success else { break }
        }
        return outcome
    }

    /// Cached probe facts were found by the client the old policy's requirements made of their host;
    /// those the new policy makes another client of (other versions or suites) are dropped, the
    /// rest stay valid (each connection judges them with its own requirements). Returns how many went.
    private func dropVerdictsWithChangedRequirements(under newPolicy: TransportSecurityPolicy) -> Int {
        let before = cache.count
        let classes = Set(configuration.listeners.compactMap(\.clientClass) + [configuration.clientClass])
        cache.removeAll { key in
            let host = key.serverName ?? key.host
            return !classes.contains { clientClass in
                let fresh = try? newPolicy.requirements(
                    forHost: host, scheme: .https, clientClass: clientClass, explaining: false)
                return fresh.map { ClientProfile.ats(for: $0) } == key.profile
            }
        }
        return before - cache.count
    }
}

extension Daemon {
    /// A cached verdict carries the address its probe reached: one for a name the hosts file now
    /// maps elsewhere (or no longer maps, or newly maps) would send the next tunnel to the old
    /// address. Those are dropped, and probes of such names still under way (dialled under the old
    /// table) answer their waiters without being stored; returns how many went.
    private func dropVerdictsWithChangedAddresses(from old: HostsTable?, to new: HostsTable?) -> Int {
        guard old != new else { return 0 }
        let before = cache.count
        cache.removeAll(includingInFlight: true) { key in old?.addresses(for: key.host) != new?.addresses(for: key.host)
        }
        return before - cache.count
    }
}

extension DaemonConfiguration {
    /// Whether the setting `key` has another value here than in `other`.
    func differs(from other: DaemonConfiguration, in key: ConfigKey) -> Bool {
        switch key {
        case .listen: listeners.map(\.address.description) != other.listeners.map(\.address.description)
        case .transparentListen:
            transparentListeners.map(\.address.description) != other.transparentListeners.map(\.address.description)
        case .upstreamMark: upstreamMark != other.upstreamMark
        case .wireguardListen: wireguardListen?.description != other.wireguardListen?.description
        case .wireguardDir: wireguardDir != other.wireguardDir
        case .wireguardInterface: wireguardInterface != other.wireguardInterface
        case .policy: policyFile != other.policyFile
        case .mode: mode != other.mode
        case .caFile: caFiles != other.caFiles
        case .appAnchor: appAnchorFiles != other.appAnchorFiles
        case .systemAnchor: systemAnchorFiles != other.systemAnchorFiles
        case .systemRoots: systemRoots != other.systemRoots
        case .hostsFile: hostsFile != other.hostsFile
        case .ctLogList: ctLogList != other.ctLogList
        case .logFile: logFile != other.logFile
        case .osProfile: osProfile != other.osProfile
        case .cipherProfile: cipherProfile != other.cipherProfile
        case .clientClass: givenClientClasses != other.givenClientClasses
        case .allowClient: allowedClients.map(\.description) != other.allowedClients.map(\.description)
        case .allowDestination: allowedDestinations.map(\.description) != other.allowedDestinations.map(\.description)
        case .verdictTTL: verdictTTL != other.verdictTTL
        case .verdictCacheSize: verdictCacheSize != other.verdictCacheSize
        case .threads: threads != other.threads
        case .controlSocket: controlSocket != other.controlSocket
        case .shutdownTimeout: shutdownTimeout != other.shutdownTimeout
        case .headTimeout: headTimeout != other.headTimeout
        case .connectTimeout: connectTimeout != other.connectTimeout
        case .handshakeTimeout: handshakeTimeout != other.handshakeTimeout
        case .idleTimeout: idleTimeout != other.idleTimeout
        case .inspect: intercept.mode != other.intercept.mode
        case .blockStyle: intercept.blockStyle != other.intercept.blockStyle
        case .passthrough: intercept.passthrough != other.intercept.passthrough
        case .logHeaders: intercept.logHeaders != other.intercept.logHeaders
        case .aiaFetch: fetchesIntermediates != other.fetchesIntermediates
        case .tunnelStart: tunnelStart != other.tunnelStart
        case .logSecrets: intercept.logSecrets != other.intercept.logSecrets
        case .caDir: caDir != other.caDir
        case .webListen: webListen != other.webListen
        case .webToken: webToken != other.webToken
        case .webTokenFile: webTokenFile != other.webTokenFile
        case .pacHosts: pacHosts != other.pacHosts
        }
    }

    /// The client classes as the settings give them: one for every listener, or one per listener in
    /// order. Compared instead of each listener's class, so that a listener added to the file (which
    /// takes the shared class) is not taken for a change of class.
    var givenClientClasses: [ClientClass?] {
        listeners.allSatisfy { $0.clientClass == clientClass } ? [clientClass] : listeners.map(\.clientClass)
    }

    /// Takes the running values of the settings a reload cannot change (sockets, threads, open files,
    /// the probes' trust store): `status` then shows what is really in force.
    mutating func keepRestartOnlySettings(of running: DaemonConfiguration) {
        let classes = givenClientClasses
        listeners = running.listeners
        transparentListeners = running.transparentListeners
        upstreamMark = running.upstreamMark
        openingConnections = running.openingConnections
        wireguardListen = running.wireguardListen
        wireguardDir = running.wireguardDir
        wireguardInterface = running.wireguardInterface
        deviceNames = running.deviceNames
        resolvedNames = running.resolvedNames
        // Client classes do change live. One for all goes to every running listener, however many
        // listeners the file now names; one per listener pairs with the running listeners in order
        // when the counts match, and otherwise waits for the restart that binds the file's listeners.
        if classes.count == 1 {
            for index in listeners.indices { listeners[index].clientClass = clientClass }
        } else if classes.count == listeners.count {
            for index in listeners.indices { listeners[index].clientClass = classes[index] }
        } else {
            clientClass = running.clientClass
        }
        threads = running.threads
        controlSocket = running.controlSocket
        logFile = running.logFile
        caFiles = running.caFiles
        appAnchorFiles = running.appAnchorFiles
        ctLogList = running.ctLogList
        systemAnchorFiles = running.systemAnchorFiles
        systemRoots = running.systemRoots
        caDir = running.caDir
        webListen = running.webListen
    }
}
