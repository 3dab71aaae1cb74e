import Foundation
import Testing

/// The result of running a program to completion.
package struct CommandResult: Sendable {
    /// The exit status; -1 when the program outlived its time limit and was killed.
    package var status: Int32
    package var standardOutput: String
    package var standardError: String
    /// Standard output as bytes, for programs whose output is not text.
    package var standardOutputBytes: Data
    /// Whether the program was still running at its time limit and was killed.
    package var killed: Bool
}

/// Runs `executable` with `arguments` (in `directory`, with `input` on its standard input), with
/// output captured through files (a pipe left undrained can stall a chatty program), and returns
/// when it exits. A program still running after `timeLimit` seconds is killed and the test gets an
/// issue: every caller expects its program to exit by itself, and a hung one must fail the test
/// rather than hang the run.
package func runCommand(
    _ executable: String, _ arguments: [String], input: Data? = nil, directory: String? = nil, timeLimit: Double = 60,
    sourceLocation: SourceLocation = #_sourceLocation
) throws -> CommandResult {
    let scratch = FileManager.default.temporaryDirectory.path + "/atsproxy-command-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: scratch) }
    let outPath = scratch + "/out"
    let errPath = scratch + "/err"
    let inPath = scratch + "/in"
    _ = FileManager.default.createFile(atPath: outPath, contents: nil)
    _ = FileManager.default.createFile(atPath: errPath, contents: nil)
    let out = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
    let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    process.standardOutput = out
    process.standardError = err
    // Input from a file too: writing a pipe before the program reads would block on a large input.
    if let input {
        _ = FileManager.default.createFile(atPath: inPath, contents: input)
        process.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: inPath))
    } else {
        process.standardInput = FileHandle.nullDevice
    }
    try process.run()
    let status = process.exitStatus(killingAfter: timeLimit)
    let exited = status != nil
    try out.close()
    try err.close()
    let output = (try? Data(contentsOf: URL(fileURLWithPath: outPath))) ?? Data()
    let errors = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
    if !exited {
        let command = ([executable] + arguments).joined(separator: " ")
        Issue.record(
            "\(command) was still running after \(timeLimit) s and was killed; stderr: \(errors)",
            sourceLocation: sourceLocation)
    }
    return CommandResult(
        status: status ?? -1, standardOutput: String(decoding: output, as: UTF8.self),
        standardError: errors, standardOutputBytes: output, killed: !exited)
}

extension Process {
    /// Waits for the process to exit, at most `seconds`; if it is still running then, kills it with
    /// SIGKILL (which cannot be blocked or ignored) and waits for it to die. Returns its exit status
    /// (the signal's number when a signal ended it, as `terminationStatus` has it), or nil when it was
    /// still running at the deadline and was killed.
    ///
    /// The kernel is asked, not Foundation: Foundation learns of every child's exit on one thread
    /// that blocks in `waitpid` on any child that has closed the descriptors it inherited (a browser,
    /// say) until that child exits. Its `isRunning` can lag a child's exit by as long as another
    /// child lives, which a busy test run took for a daemon that would not stop.
    package func exitStatus(killingAfter seconds: Double) -> Int32? {
        if let status = exitStatus(within: seconds) { return status }
        kill(processIdentifier, SIGKILL)
        waitForExit()
        return nil
    }

    /// The exit status once the process exits, waiting at most `seconds`; nil if it still runs then
    /// (and it is left running).
    package func exitStatus(within seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        repeat {
            if let status = ChildExit.status(of: processIdentifier, waiting: false) ?? finishedStatus {
                return settled(status)
            }
            Thread.sleep(forTimeInterval: 0.01)
        } while Date() < deadline
        return (ChildExit.status(of: processIdentifier, waiting: false) ?? finishedStatus).map(settled)
    }

    /// Returns `status`, leaving Foundation's own wait to a queue: `waitUntilExit()` breaks the cycle
    /// between a Process and its run loop source (which leaks them both without it), but it lasts
    /// until Foundation's thread has reaped the child, which may be late (see above).
    ///
    /// Once per Process (``ProcessWaits``): a daemon's `terminate()` and then its `deinit` each
    /// settle it, and two `waitUntilExit()`s of one Process on two threads race on its `runLoop`
    /// (swift-corelibs-foundation sets and compares it unlocked): a sanitizer run crashed twice in
    /// it, in `NSObject.isEqual` under ASan and in `Process.terminateRunLoop` under TSan.
    private func settled(_ status: Int32) -> Int32 {
        if ProcessWaits.shared.isFirst(self) { DispatchQueue.global().async { self.waitUntilExit() } }
        return status
    }

    /// Blocks until the process has exited (the kernel's word, not Foundation's: see
    /// ``exitStatus(killingAfter:)``) and returns its exit status.
    @discardableResult
    package func waitForExit() -> Int32 {
        if let status = ChildExit.status(of: processIdentifier, waiting: true) ?? finishedStatus {
            return settled(status)
        }
        // Reaped between the two questions: Foundation has the status, or is about to. Its wait is
        // this thread's unless one was started already (``settled(_:)``).
        if ProcessWaits.shared.isFirst(self) {
            waitUntilExit()
        } else {
            while isRunning { Thread.sleep(forTimeInterval: 0.01) }
        }
        return terminationStatus
    }

    /// Whether the process has exited, reaped or not.
    package var hasExited: Bool { ChildExit.status(of: processIdentifier, waiting: false) != nil || !isRunning }

    /// The status Foundation recorded, once it has reaped the child (the kernel no longer has it then).
    private var finishedStatus: Int32? {
        guard !isRunning else { return nil }
        return terminationStatus
    }
}

/// The Processes whose Foundation wait (`waitUntilExit()`) has been started, each kept for the rest
/// of the run: a wait is started once per Process, and a Process freed could give its address to
/// a new one that would then never be waited for. A few thousand small objects per run.
final class ProcessWaits: @unchecked Sendable {
    static let shared = ProcessWaits()
    private let lock = NSLock()
    private var started: [ObjectIdentifier: Process] = [:]

    /// Whether this is the first call for `process`: then its caller starts the wait.
    func isFirst(_ process: Process) -> Bool {
        lock.withLock {
            guard started[ObjectIdentifier(process)] == nil else { return false }
            started[ObjectIdentifier(process)] = process
            return true
        }
    }
}

/// A child's exit as the kernel reports it, without reaping it: Foundation's own thread reaps it.
enum ChildExit {
    /// The exit status (or the number of the signal that ended it) once `pid` has exited; nil while it
    /// runs, or once it has been reaped. `waiting` blocks until it exits.
    static func status(of pid: pid_t, waiting: Bool) -> Int32? {
        var info = siginfo_t()
        let options = WEXITED | WNOWAIT | (waiting ? 0 : WNOHANG)
        while waitid(P_PID, id_t(pid), &info, options) == -1 {
            guard errno == EINTR else { return nil }
        }
        // With WNOHANG and no change yet, waitid succeeds and leaves si_pid zero.
        guard info._sifields._kill.si_pid == pid else { return nil }
        return info._sifields._sigchld.si_status
    }
}
