import Foundation
import TLSTestSupport
import Testing

/// The real `atsproxy` executable (built next to the test bundle) in a process of its own, with its
/// standard error captured to read the ports it listens on.
final class DaemonProcess {
    let process: Process
    let ports: [UInt16]
    let stderrPath: String
    let logPath: String
    /// The control socket: in /tmp with a short name (a socket path holds at most 107 bytes), unless
    /// the arguments give their own.
    let controlSocket: String

    /// The executable `swift build --build-tests` put beside this test bundle.
    static var executable: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("atsproxy")
            .path
    }

    /// Starts `atsproxy` with `arguments` plus `--log-file` in `directory`; `wrapper` (for example
    /// `prlimit --nofile=32`) runs it, with `environment` added to the test's own. Waits for its
    /// "listening on" line.
    ///
    /// - Parameter namedByConfig: the log file and control socket the `--config` file names, for a
    ///   test that changes them in the file: no flag is added for them then, since a flag would
    ///   override the file's line and hide the change from a reload.
    init(
        directory: String, _ arguments: [String], wrapper: [String] = [], environment: [String: String] = [:],
        namedByConfig files: (logFile: String, controlSocket: String)? = nil
    ) throws {
        stderrPath = directory + "/atsproxy-\(UUID().uuidString).err"
        process = Process()
        var flags: [String] = []
        if let files {
            logPath = files.logFile
            controlSocket = files.controlSocket
        } else {
            logPath = directory + "/atsproxy-\(UUID().uuidString).log"
            if let index = arguments.firstIndex(of: "--control-socket"), index + 1 < arguments.count {
                controlSocket = arguments[index + 1]
            } else {
                controlSocket = "/tmp/atsproxy-test-\(UUID().uuidString.prefix(8)).sock"
            }
            let control = arguments.contains("--control-socket") ? [] : ["--control-socket", controlSocket]
            flags = ["--log-file", logPath] + control
            // Every daemon's own live view, on a port of its own: tests run side by side. Not with a
            // config file, whose own web-listen line a flag would hide from reloads (a file without
            // one takes the default; when that is taken, the daemon starts without a live view).
            if !arguments.contains("--web-listen"), !arguments.contains("--config") {
                flags += ["--web-listen", "127.0.0.1:0"]
            }
        }
        let command = wrapper + [Self.executable] + arguments + flags
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        // A test run that is itself a systemd service must not have its manager hear our daemons.
        var inherited = ProcessInfo.processInfo.environment
        inherited["NOTIFY_SOCKET"] = nil
        process.environment = inherited.merging(environment) { $1 }
        let marker = "atsproxy listening on "
        ports = try ProcessLaunch.start(process, outputPath: stderrPath, name: "atsproxy") { text in
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(marker) }) else { return nil }
            // "atsproxy listening on 127.0.0.1:41000, [::1]:41001 with 2 threads, …"
            let list = line.dropFirst(marker.count).prefix { $0 != "w" }
            return list.split(separator: ",").compactMap {
                UInt16($0.trimmingCharacters(in: .whitespaces).split(separator: ":").last ?? "")
            }
        }
    }

    deinit {
        if !process.hasExited { kill(process.processIdentifier, SIGKILL) }
        process.waitForExit()
        unlink(controlSocket)
    }

    var port: UInt16 { ports[0] }

    /// The web listener's port, from the line the daemon says it on ("… live view and /metrics: http://127.0.0.1:PORT/").
    var webPort: UInt16? {
        guard let line = standardError.split(separator: "\n").first(where: { $0.contains("live view and /metrics: ") })
        else { return nil }
        return UInt16(line.split(separator: ":").last?.trimmingCharacters(in: CharacterSet(charactersIn: "/ ")) ?? "")
    }

    /// Sends SIGTERM and returns the exit status, waiting at most `timeout` seconds (see
    /// ``exitStatus(within:_:sourceLocation:)``).
    func terminate(within timeout: Double = 10, sourceLocation: SourceLocation = #_sourceLocation) -> Int32 {
        kill(process.processIdentifier, SIGTERM)
        return exitStatus(within: timeout, "after SIGTERM", sourceLocation: sourceLocation)
    }

    /// The exit status once the daemon exits by itself, waiting at most `timeout` seconds: a daemon
    /// still running then is killed with SIGKILL, the test gets an issue (saying `when` it was
    /// expected to exit), and the status is -1. A stop that never comes fails the test instead of
    /// hanging the run.
    func exitStatus(within timeout: Double, _ when: String, sourceLocation: SourceLocation = #_sourceLocation) -> Int32
    {
        if let status = process.exitStatus(within: timeout) { return status }
        // What it was doing, for a stop that never comes: each thread's stack, from gdb.
        let stacks = Self.threadStacks(of: process.processIdentifier)
        _ = process.exitStatus(killingAfter: 0)
        let message = "atsproxy was still running \(timeout) s \(when) and was killed; stderr: \(standardError)"
        Issue.record("\(message)\nits threads then:\n\(stacks)", sourceLocation: sourceLocation)
        return -1
    }

    /// Each thread's state and stack in process `pid`, from /proc and `gdb -batch` where it is installed.
    static func threadStacks(of pid: pid_t) -> String {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let state = status.split(separator: "\n").first { $0.hasPrefix("State:") }.map(String.init) ?? "State: ?"
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/gdb") else { return state + " (no gdb)" }
        let gdb = try? runCommand(
            "/usr/bin/gdb", ["-batch", "-p", "\(pid)", "-ex", "thread apply all bt 30"], timeLimit: 60)
        let stacks = (gdb?.standardOutput ?? "").split(separator: "\n").filter {
            $0.hasPrefix("#") || $0.hasPrefix("Thread ")
        }
        return ([state] + stacks.prefix(200).map(String.init)).joined(separator: "\n")
    }

    var standardError: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// The log's JSON lines once there are at least `count`, or what is there after 10 seconds.
    func logLines(atLeast count: Int) -> [[String: Any]] {
        var lines: [[String: Any]] = []
        _ = eventually(timeout: 10, interval: 0.02) {
            let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            lines = text.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            return lines.count >= count
        }
        return lines
    }

    /// How many descriptors the process has open, from /proc.
    var openDescriptors: Int { openDescriptorNumbers.count }

    /// The numbers of the descriptors the process has open, from /proc, in order.
    var openDescriptorNumbers: [Int] {
        let entries =
            (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/fd")) ?? []
        return entries.compactMap { Int($0) }.sorted()
    }

    /// The paths of the files the process holds open, from /proc (a renamed file shows its new name).
    var openFilePaths: Set<String> {
        let directory = "/proc/\(process.processIdentifier)/fd"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return Set(
            entries.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/" + $0) })
    }

    /// User plus system CPU seconds the process has used so far, from /proc.
    var cpuSeconds: Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command name: state is field 3, utime 14 and stime 15 (1-based in proc(5)).
        let ticks = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}

extension DaemonProcess {
    /// The proxy's verdict on one URL, as the parity suites compare it with `diagnose`'s: a
    /// daemon started in `directory` with `arguments`, one curl through it (certificates not
    /// checked: the proxy's verdict is what is read), its first log line, and the daemon stopped.
    static func lineForOneRequest(
        directory: String, _ arguments: [String], url: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> [String: Any] {
        let daemon = try DaemonProcess(directory: directory, arguments)
        _ = try runCommand(
            "/usr/bin/curl", ["-sS", "-k", "--max-time", "20", "--proxy", "http://127.0.0.1:\(daemon.port)", url])
        let line = try #require(daemon.logLines(atLeast: 1).first, sourceLocation: sourceLocation)
        #expect(daemon.terminate() == 0, sourceLocation: sourceLocation)
        return line
    }
}
