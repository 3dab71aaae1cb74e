import Foundation
import TLSTestSupport
import Testing

/// The real daemon in intercept mode between the hostile HTTP/2 peers of `HTTP2/hostile_h2.py`: a
/// device that goes through it (CONNECT, TLS with ALPN h2 trusting the interception CA) and origins
/// it connects to (TLS with ALPN h2, a leaf under the fixture's root), each behaving as its mode
/// says. Every rig has a well-behaved origin, ``health``, the daemon's health is judged by.
final class HTTP2HostileRig {
    static let script = Repository.path("Tests/ATSProxyDaemonTests/HTTP2/hostile_h2.py")
    /// The well-behaved origin every rig has, for the health check.
    static let health = "health"
    /// Another well-behaved origin every rig has, for the hostile devices: its connections are theirs.
    static let target = "target"

    struct Origin {
        let process: Process
        let port: UInt16
        let log: String
    }

    let fixture: InterceptFixture
    let daemon: DaemonProcess
    let origins: [String: Origin]

    /// The name an origin is reached by (the fixture's hosts file maps it to 127.0.0.1).
    static func host(_ name: String) -> String { "\(name).h2hostile.test" }

    /// Starts an origin for each of `origins` (its name: the script's server mode), the health
    /// origin, and the daemon with `daemonFlags`.
    init(origins named: [String: String] = [:], daemonFlags: [String] = []) throws {
        let all = named.merging([Self.health: "good", Self.target: "good"]) { $1 }
        let hosts = all.keys.map(Self.host)
        fixture = try InterceptFixture(names: hosts)
        try fixture.leaf("leaf", for: hosts)
        var started: [String: Origin] = [:]
        for (name, mode) in all {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: PrometheusScrape.python)
            process.arguments = [
                "-u", Self.script, "server", mode, fixture.factory.path("leaf.pem"), fixture.factory.path("leaf.key"),
            ]
            let log = fixture.factory.path("origin-\(name).log")
            let port = try ProcessLaunch.start(process, outputPath: log, name: "the \(name) origin", timeout: 20) {
                ProcessLaunch.port(after: "PORT ", in: $0)
            }
            started[name] = Origin(process: process, port: port, log: log)
        }
        origins = started
        daemon = try fixture.daemon(daemonFlags)
    }

    deinit {
        for origin in origins.values {
            kill(origin.process.processIdentifier, SIGKILL)
            origin.process.waitForExit()
        }
    }

    /// One device connection in the script's client `mode` to the origin `name`, with `argument`:
    /// the JSON line it prints (what the proxy did to it), once it has exited by itself.
    func device(_ mode: String, to name: String = target, _ argument: Int? = nil) throws -> [String: Any] {
        let origin = try #require(origins[name])
        let result = try runCommand(
            PrometheusScrape.python,
            [
                Self.script, "client", mode, "\(daemon.port)", Self.host(name), "\(origin.port)", fixture.caPEM,
            ] + (argument.map { ["\($0)"] } ?? []),
            // A guard against a hang: every wait in the script has its own deadline, well within it.
            timeLimit: 400)
        let last = result.standardOutput.split(separator: "\n").last.map(String.init) ?? ""
        guard result.status == 0, let line = jsonObject(last) else {
            throw FixtureError(message: "the \(mode) device: \(result.standardOutput) \(result.standardError)")
        }
        return line
    }

    /// The connections to the origin `name` that have ended, as it logged them (`streams` opened,
    /// `resets_received`, `resets_sent`, `written_frames` of a flood), once there are `count`.
    func originConnections(_ name: String, atLeast count: Int = 1) -> [[String: Any]] {
        var found: [[String: Any]] = []
        _ = eventually(timeout: 60) {
            let text = (try? String(contentsOfFile: origins[name]?.log ?? "", encoding: .utf8)) ?? ""
            found = text.split(separator: "\n").filter { $0.hasPrefix("CONNECTION ") }.compactMap {
                jsonObject(String($0.dropFirst("CONNECTION ".count)))
            }
            return found.count >= count
        }
        return found
    }

    /// The daemon's connection line for the (first) connection to the origin `name`, once it is written.
    func connectionLine(to name: String = target) -> [String: Any]? {
        var found: [String: Any]?
        _ = eventually(timeout: 60) {
            found = daemon.logLines(atLeast: 0).first {
                $0.kind == "connection" && $0["host"] as? String == Self.host(name)
            }
            return found != nil
        }
        return found
    }

    /// The request lines of connections to the origin `name`, once there are `count`.
    func requestLines(to name: String = target, atLeast count: Int) -> [[String: Any]] {
        var found: [[String: Any]] = []
        _ = eventually(timeout: 60) {
            found = daemon.logLines(atLeast: 0).filter {
                $0.kind == "request" && $0["host"] as? String == Self.host(name)
            }
            return found.count >= count
        }
        return found
    }

    /// Whether the daemon still relays HTTP/2: curl --http2 through it to the health origin gets the
    /// body, over HTTP/2.
    func servesAFineRequest(sourceLocation: SourceLocation = #_sourceLocation) throws -> Bool {
        let port = try #require(origins[Self.health]?.port)
        let result = try fixture.curl(
            daemon, ["--http2", "-w", "%{http_version}", "https://\(Self.host(Self.health)):\(port)/fine"])
        guard result.status == 0, result.standardOutput == "fine\n2" else {
            Issue.record(
                "curl --http2: \(result.standardOutput) \(result.standardError)", sourceLocation: sourceLocation)
            return false
        }
        return true
    }

    /// Runs `body` while sampling the daemon's RSS: how far it rose above where it was (KiB), after
    /// a first request has warmed the relay up.
    func residentGrowth(during body: () throws -> Void) throws -> Int {
        _ = try servesAFineRequest()
        let memory = PeakResidentMemory(pid: daemon.process.processIdentifier)
        try body()
        return memory.stop() - memory.start
    }
}

/// What the sanitizers change: ThreadSanitizer slows the daemon many times over (fewer frames), and
/// both keep memory (shadow, quarantine) that makes RSS say nothing about the relay's own.
enum Sanitized {
    static var thread: Bool { ProcessInfo.processInfo.environment["TSAN_OPTIONS"] != nil }
    static var address: Bool { ProcessInfo.processInfo.environment["ASAN_OPTIONS"] != nil }
    static var measuresMemory: Bool { !thread && !address }

    /// `count`, or a fifth of it (at least `floor`) under ThreadSanitizer.
    static func scaled(_ count: Int, floor: Int = 1) -> Int { thread ? max(floor, count / 5) : count }
}
