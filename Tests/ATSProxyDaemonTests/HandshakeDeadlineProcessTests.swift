import Foundation
import POSIX
import Synchronization
import TLSTestSupport
import Testing

/// The real daemon against upstreams that accept and never answer: every CONNECT is answered at
/// `--handshake-timeout`, and the daemon runs no more threads for them than before.
@Suite("Handshake deadline in the daemon", .startsProcesses(timeLimit: .seconds(60)))
struct HandshakeDeadlineProcessTests {
    /// The daemon's thread count, from /proc.
    static func threads(of process: Process) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)
        else {
            return nil
        }
        return status.split(separator: "\n").first { $0.hasPrefix("Threads:") }
            .flatMap { Int($0.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) }
    }

    @Test("60 silent upstreams: each CONNECT gets 504 at --handshake-timeout 2, and the thread count does not move")
    func silentUpstreams() throws {
        let factory = try CertificateFactory()
        try factory.rootCA("root")
        let servers = try (0..<60).map { _ in
            try RawTCPServer { connection in _ = awaitPeerClose(connection, wait: 30) }
        }
        let policy = factory.directory + "/policy.plist"
        try """
        <plist version="1.0"><dict><key>NSExceptionDomains</key><dict><key>localhost</key><dict/></dict></dict></plist>
        """.write(toFile: policy, atomically: true, encoding: .utf8)
        let daemon = try DaemonProcess(
            directory: factory.directory,
            [
                "--listen", "127.0.0.1:0", "--policy", policy, "--ca-file", factory.path("root.pem"), "--system-roots",
                "off",
                "--threads", "2", "--handshake-timeout", "2",
                // Each CONNECT's 504 at the deadline: verdict mode, where the 200 waits for the probe.
                "--tunnel-start", "verdict",
            ])
        let before = try #require(Self.threads(of: daemon.process))

        let proxyPort = daemon.port
        let answers = Locked<[String]>([])
        let peak = Atomic<Int>(0)
        let group = DispatchGroup()
        for server in servers {
            DispatchQueue.global().async(group: group) {
                guard let client = connectLoopback(port: proxyPort) else { return }
                defer { close(client) }
                sendAll(client, Array("CONNECT localhost:\(server.port) HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
                let head = receiveHead(client, wait: 10)?.head ?? "no answer"
                answers.withLock { $0.append(String(head.prefix(40))) }
            }
        }
        // While they wait: sample the daemon's threads every 100 ms until every CONNECT is answered.
        repeat {
            if let count = Self.threads(of: daemon.process) { peak.max(count, ordering: .relaxed) }
        } while group.wait(timeout: .now() + 0.1) == .timedOut
        let heads = answers.withLock { $0 }
        #expect(heads.count == 60)
        #expect(heads.allSatisfy { $0.hasPrefix("HTTP/1.1 504 Gateway Timeout") }, "\(Set(heads))")
        #expect(
            peak.load(ordering: .relaxed) <= before,
            "threads: \(before) before, \(peak.load(ordering: .relaxed)) while probing")
        #expect(Self.threads(of: daemon.process) == before)
        let lines = daemon.logLines(atLeast: 60)
        #expect(
            lines.allSatisfy { $0["upstream_error"] as? String == "upstream sent no TLS handshake in 2 s" },
            "\(lines.first ?? [:])")
        withExtendedLifetime(servers) {}
    }
}
