import Glibc

/// Programs the daemon runs: the ones that set up a WireGuard tunnel (`ip`, `wg`, `nft`), run to
/// completion, and `wireguard-go`, which runs beside the daemon until stopped. Started with
/// posix_spawn (no fork of a threaded process), found on PATH, with the daemon's environment.
package enum Subprocess {
    /// What a finished program said and how it ended.
    package struct Outcome: Sendable {
        /// The exit status; nil when a signal ended it.
        package var status: Int32?
        /// Its standard output and error, together (at most 64 KiB).
        package var output: String
        package var succeeded: Bool { status == 0 }
    }

    /// A program that could not be started, or that failed: the command and what it said.
    package struct Failure: Error, Sendable, CustomStringConvertible {
        package var command: [String]
        package var reason: String
        package var description: String { "\(command.joined(separator: " ")): \(reason)" }
    }

    /// Runs `arguments` with `input` on its standard input, and waits for it to end.
    package static func run(_ arguments: [String], input: [UInt8] = []) throws(Failure) -> Outcome {
        var toChild: [Int32] = [-1, -1]
        var fromChild: [Int32] = [-1, -1]
        guard makePipe(&toChild) else { throw Failure(command: arguments, reason: errnoText()) }
        guard makePipe(&fromChild) else {
            close(toChild[0])
            close(toChild[1])
            throw Failure(command: arguments, reason: errnoText())
        }
        let pid: pid_t
        do {
            pid = try spawn(arguments, stdin: toChild[0], stdout: fromChild[1])
        } catch {
            for descriptor in toChild + fromChild { close(descriptor) }
            throw error
        }
        close(toChild[0])
        close(fromChild[1])
        // The programs read little and write little: the input fits a pipe's buffer, so writing it
        // all before reading cannot deadlock.
        var written = 0
        while written < input.count {
            let count = input[written...].withUnsafeBytes { write(toChild[1], $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            written += count
        }
        close(toChild[1])
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fromChild[0], $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            if output.count < 65536 { output += buffer[..<count] }
        }
        close(fromChild[0])
        let status = wait(for: pid)
        return Outcome(status: status, output: String(decoding: output, as: UTF8.self))
    }

    /// Runs `arguments` and throws, with what it said, unless it exits 0.
    package static func check(_ arguments: [String], input: [UInt8] = []) throws(Failure) {
        let outcome = try run(arguments, input: input)
        guard outcome.succeeded else {
            let ending = outcome.status.map { "exit status \($0)" } ?? "killed by a signal"
            let said = outcome.output.split(separator: "\n").joined(separator: "; ")
            throw Failure(command: arguments, reason: said.isEmpty ? ending : "\(ending): \(said)")
        }
    }

    /// Starts `arguments` with /dev/null as its input and the daemon's standard error as its
    /// output, and returns at once: the caller reaps it (``reap(_:)``) when SIGCHLD says it ended.
    /// `environment` is added to the daemon's.
    package static func start(_ arguments: [String], environment: [String: String] = [:]) throws(Failure) -> pid_t {
        let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { if null >= 0 { close(null) } }
        return try spawn(arguments, stdin: null, stdout: STDERR_FILENO, environment: environment)
    }

    /// Whether `pid` has ended (reaped now, with its status), without waiting.
    package static func reap(_ pid: pid_t) -> (ended: Bool, status: Int32?) {
        var status: Int32 = 0
        let result = waitpid(pid, &status, WNOHANG)
        guard result == pid else { return (result < 0 && errno == ECHILD, nil) }
        return (true, exitStatus(status))
    }

    /// Waits for `pid` to end; its exit status, nil when a signal ended it.
    @discardableResult
    package static func wait(for pid: pid_t) -> Int32? {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return nil }
        }
        return exitStatus(status)
    }

    private static func exitStatus(_ status: Int32) -> Int32? {
        // WIFEXITED and WEXITSTATUS, which Swift does not import: the low 7 bits are the signal.
        status & 0x7F == 0 ? (status >> 8) & 0xFF : nil
    }

    private static func spawn(
        _ arguments: [String], stdin: Int32, stdout: Int32, environment: [String: String] = [:]
    ) throws(Failure) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdin, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        posix_spawn_file_actions_adddup2(&actions, stdout, 2)
        // The daemon blocks its signals on every thread (a loop takes them); the child starts with none blocked.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGXFSZ, SIGTERM, SIGINT, SIGHUP, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        // A group of its own: a terminal's Ctrl-C reaches the daemon, which stops its child itself.
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var inherited: [String] = []
        var index = 0
        while let entry = environ[index] {
            let text = String(cString: entry)
            if !environment.keys.contains(where: { text.hasPrefix($0 + "=") }) { inherited.append(text) }
            index += 1
        }
        var envp: [UnsafeMutablePointer<CChar>?] =
            (inherited + environment.map { "\($0.key)=\($0.value)" }).map { strdup($0) } + [nil]
        defer { for entry in envp { free(entry) } }
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, arguments[0], &actions, &attributes, &argv, &envp)
        guard result == 0 else {
            throw Failure(command: arguments, reason: "cannot start: \(String(cString: strerror(result)))")
        }
        return pid
    }

    /// A pipe whose ends no other program inherits (pipe2's O_CLOEXEC, which Glibc declares only
    /// under _GNU_SOURCE; only the daemon's main thread starts programs, so nothing spawns between).
    private static func makePipe(_ ends: inout [Int32]) -> Bool {
        guard pipe(&ends) == 0 else { return false }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return true
    }

    private static func errnoText() -> String { String(cString: strerror(errno)) }
}
