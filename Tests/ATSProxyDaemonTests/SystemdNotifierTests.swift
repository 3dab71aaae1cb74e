import Foundation
import TLSTestSupport
import Testing

@testable import ATSProxyDaemon

/// The sd_notify messages, read from a real datagram socket bound where `$NOTIFY_SOCKET` points.
@Suite("sd_notify without libsystemd")
struct SystemdNotifierTests {
    static func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.path + "/atsproxy-notify-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test("READY=1 and a status arrive as one datagram, at a path and at an abstract name", arguments: [false, true])
    func readyWithStatus(abstract: Bool) throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socket = try NotifySocket(directory: directory, abstract: abstract)
        let notifier = SystemdNotifier(socket: socket.address)
        #expect(notifier.isEnabled)
        try notifier.notify(.ready, .status("listening on 127.0.0.1:8080"))
        #expect(socket.receive() == "READY=1\nSTATUS=listening on 127.0.0.1:8080")
        try notifier.notify(.stopping)
        #expect(socket.receive() == "STOPPING=1")
    }

    @Test("RELOADING=1 carries MONOTONIC_USEC from CLOCK_MONOTONIC, and MAINPID is this process")
    func reloadingAndMainPID() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socket = try NotifySocket(directory: directory)
        let notifier = SystemdNotifier(socket: socket.address)
        var before = timespec()
        clock_gettime(CLOCK_MONOTONIC, &before)
        try notifier.notify(.reloading, .monotonicNow(), .status("reloading the policy"))
        var after = timespec()
        clock_gettime(CLOCK_MONOTONIC, &after)
        let fields = NotifySocket.fields(try #require(socket.receive()))
        #expect(fields.map(\.key) == ["RELOADING", "MONOTONIC_USEC", "STATUS"])
        let microseconds = try #require(Int64(fields[1].value))
        #expect(microseconds >= Int64(before.tv_sec) * 1_000_000 + Int64(before.tv_nsec) / 1000)
        #expect(microseconds <= Int64(after.tv_sec) * 1_000_000 + Int64(after.tv_nsec) / 1000)
        try notifier.notify(.mainPID())
        #expect(socket.receive() == "MAINPID=\(getpid())")
    }

    @Test("a newline in a status cannot start a field of its own")
    func newlinesInStatus() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socket = try NotifySocket(directory: directory)
        try SystemdNotifier(socket: socket.address).notify(.status("policy bad\nREADY=1"))
        #expect(socket.receive() == "STATUS=policy bad READY=1")
    }

    @Test("without NOTIFY_SOCKET every call is a no-op", arguments: [nil, ""] as [String?])
    func absent(value: String?) throws {
        let notifier = SystemdNotifier(socket: value)
        #expect(!notifier.isEnabled)
        try notifier.notify(.ready, .status("ignored"))
    }

    @Test("a socket that went away is a typed error, not a crash")
    func vanishedSocket() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let notifier = SystemdNotifier(socket: directory + "/gone.sock")
        #expect(throws: SystemdNotifier.Failure.send(ENOENT)) { try notifier.notify(.ready) }
        // A second name for a socket whose owner has closed it: the file is there, nobody reads.
        let stale = directory + "/stale.sock"
        do {
            let socket = try NotifySocket(directory: directory)
            #expect(link(socket.address, stale) == 0)
        }
        // A child that another test forks at that moment holds a copy of the descriptor until it
        // execs (CLOEXEC), and the socket lives on in it until then: wait for it to go.
        let refused = eventually(timeout: 30) {
            do {
                try SystemdNotifier(socket: stale).notify(.ready)
                return false
            } catch {
                return (error as? SystemdNotifier.Failure) == .send(ECONNREFUSED)
            }
        }
        #expect(refused, "a send to a socket nobody holds is ECONNREFUSED")
    }

    @Test(
        "addresses other than a path or @name are refused when sending",
        arguments: ["vsock:2:1234", "relative.sock", "@"])
    func unsupportedAddress(value: String) {
        let notifier = SystemdNotifier(socket: value)
        #expect(notifier.isEnabled)
        #expect(throws: SystemdNotifier.Failure.unsupportedAddress(value)) { try notifier.notify(.ready) }
    }

    @Test("a path longer than sun_path is refused rather than cut")
    func tooLong() {
        let value = "/" + String(repeating: "x", count: 200)
        #expect(throws: SystemdNotifier.Failure.unsupportedAddress(value)) {
            try SystemdNotifier(socket: value).notify(.ready)
        }
    }

    @Test("one notifier is shared by many threads at once")
    func concurrentSends() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socket = try NotifySocket(directory: directory)
        let notifier = SystemdNotifier(socket: socket.address)
        // More than the kernel queues by default (net.unix.max_dgram_qlen is 10), so some senders
        // wait for this thread to read: threads of their own, not the test's task pool.
        let count = 40
        DispatchQueue.global().async {
            DispatchQueue.concurrentPerform(iterations: count) { index in
                try? notifier.notify(.status("message \(index)"))
            }
        }
        var received: Set<String> = []
        while received.count < count, let message = socket.receive(timeout: 10) { received.insert(message) }
        #expect(received == Set((0..<count).map { "STATUS=message \($0)" }))
    }
}
