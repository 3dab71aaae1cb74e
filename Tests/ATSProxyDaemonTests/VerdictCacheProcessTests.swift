import ATSProxyCtl
import Foundation
import TLSTestSupport
import Testing

/// The real `atsproxy`'s verdict cache held to `verdict-cache-size`: CONNECTs to more hosts than it
/// may hold, all on one TLS server that every name in the hosts file points at, and the control
/// socket's counters.
@Suite("atsproxy's verdict cache size", .startsProcesses(timeLimit: .seconds(60)))
struct VerdictCacheProcessTests {
    static let hosts = (1...5).map { "h\($0).test" }

    /// A root, a TLS 1.3 server whose certificate names every host, and the hosts file.
    final class Upstream {
        let factory: CertificateFactory
        let server: TestTLSServer
        let hostsFile: String

        init() throws {
            factory = try CertificateFactory()
            try factory.rootCA("root")
            let names = VerdictCacheProcessTests.hosts.map { "DNS:\($0)" }.joined(separator: ",")
            try factory.certificate(
                "leaf", issuer: "root", extensions: ["subjectAltName=\(names)", "extendedKeyUsage=serverAuth"])
            server = try TestTLSServer(
                directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key", "-tls1_3"])
            hostsFile = try writeHostsFile(in: factory.directory, VerdictCacheProcessTests.hosts)
        }

        /// curl's status for https://`host`/ through the proxy on `port`.
        func connect(_ host: String, proxyPort: UInt16) throws -> Int {
            let result = try curlStatus(
                proxyPort: proxyPort, "https://\(host):\(server.port)/", ["--cacert", factory.path("root.pem")])
            if result.code != 200 { Issue.record("\(host): \(result.code) \(result.error)") }
            return result.code
        }
    }

    static func cache(_ socket: String) -> [String: Any] {
        daemonStats(socket)?["verdict_cache"] as? [String: Any] ?? [:]
    }

    @Test(
        "--verdict-cache-size 3: five hosts leave three verdicts, the least recently used evicted, and the counters say so"
    )
    func boundedByTheFlag() throws {
        let upstream = try Upstream()
        defer { withExtendedLifetime(upstream) {} }
        let daemon = try DaemonProcess(
            directory: upstream.factory.directory,
            [
                "--listen", "127.0.0.1:0", "--hosts-file", upstream.hostsFile, "--ca-file",
                upstream.factory.path("root.pem"),
                "--system-roots", "off", "--threads", "2", "--verdict-cache-size", "3",
            ])
        for host in Self.hosts { _ = try upstream.connect(host, proxyPort: daemon.port) }

        var cache = Self.cache(daemon.controlSocket)
        #expect((cache["entries"] as? Int ?? .max) <= 3, "\(cache)")
        #expect((cache["evictions"] as? Int ?? 0) > 0, "\(cache)")
        #expect(cache["evictions"] as? Int == 2, "\(cache)")
        #expect(cache["misses"] as? Int == 5, "\(cache)")
        #expect(cache["max_entries"] as? Int == 3, "\(cache)")
        #expect(cache["in_flight"] as? Int == 0, "\(cache)")

        // h5 is among the three most recent: a hit. h1 went first: probed again, evicting another.
        _ = try upstream.connect("h5.test", proxyPort: daemon.port)
        _ = try upstream.connect("h1.test", proxyPort: daemon.port)
        cache = Self.cache(daemon.controlSocket)
        #expect(cache["hits"] as? Int == 1, "\(cache)")
        #expect(cache["misses"] as? Int == 6, "\(cache)")
        #expect(cache["evictions"] as? Int == 3, "\(cache)")
        #expect(cache["entries"] as? Int == 3, "\(cache)")

        let stats = atsproxyctl("stats", "--socket", daemon.controlSocket).standardOutput
        #expect(
            stats.contains("Verdict cache: 3 entries (kept 300 s); at most 3, 0 probes in flight (0 TLS handshakes)\n"),
            "\(stats)")
        #expect(
            stats.contains("               1 hit, 6 misses, 0 joined a probe in flight, 3 evicted, 0 expired\n"),
            "\(stats)")
        // status carries the size, the limit and the probes in flight; the counters are for stats.
        let status = try #require(daemonStatus(daemon.controlSocket)?["verdict_cache"] as? [String: Any])
        #expect(status["max_entries"] as? Int == 3 && status["entries"] as? Int == 3, "\(status)")
        #expect(status["hits"] == nil, "\(status)")
        #expect(daemon.terminate() == 0)
    }

    @Test(
        "a reload that lowers verdict-cache-size evicts down to it at once; a bad value is refused and changes nothing")
    func shrunkAtReload() throws {
        let lab = try ConfigReloadProcessTests.Lab(hosts: Self.hosts)
        let factory = lab.factory
        try factory.rootCA("root")
        let names = Self.hosts.map { "DNS:\($0)" }.joined(separator: ",")
        try factory.certificate(
            "leaf", issuer: "root", extensions: ["subjectAltName=\(names)", "extendedKeyUsage=serverAuth"])
        let server = try TestTLSServer(
            directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key", "-tls1_3"])
        let settings = [
            "listen = 127.0.0.1:0", "threads = 1", "system-roots = off", "ca-file = root.pem", "hosts-file = hosts",
        ]
        try lab.writeConfig(settings + ["verdict-cache-size = 4"])
        try lab.start()
        let daemon = lab.daemon!
        for host in Self.hosts.prefix(4) {
            let result = try curlStatus(
                proxyPort: daemon.port, "https://\(host):\(server.port)/", ["--cacert", factory.path("root.pem")])
            #expect(result.code == 200, "\(host): \(result.error)")
        }
        #expect(Self.cache(daemon.controlSocket)["entries"] as? Int == 4)

        try lab.writeConfig(settings + ["verdict-cache-size = 1"])
        let answer = lab.reloadAnswer()
        #expect(ConfigReloadProcessTests.Lab.keys(answer, "settings_applied") == ["verdict-cache-size"], "\(answer)")
        let cache = Self.cache(daemon.controlSocket)
        #expect(cache["entries"] as? Int == 1, "\(cache)")
        #expect(cache["max_entries"] as? Int == 1, "\(cache)")
        #expect(cache["evictions"] as? Int == 3, "\(cache)")

        try lab.writeConfig(settings + ["verdict-cache-size = none"])
        let refused = lab.reload()
        #expect(refused.exitCode == 1)
        #expect(
            refused.standardError.contains(
                "atsproxy.conf:6: key 'verdict-cache-size': \"none\" is not a whole number of entries"),
            "\(refused.standardError)")
        #expect(Self.cache(daemon.controlSocket)["max_entries"] as? Int == 1)
        #expect(daemon.terminate() == 0)
    }
}
