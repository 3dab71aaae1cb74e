import Foundation
import TLSTestSupport
import Testing

/// A server that leaves its intermediate out, through the proxy: the probe fetches it from the
/// leaf's CA Issuers URL as iOS does (on the loop, bounded, cached, one fetch per URL at a time), and
/// the connection's line says so; with `--aia-fetch off` the verdict names what was missing and where.
@Suite("missing intermediates fetched by the proxy", .startsProcesses(timeLimit: .seconds(120)))
struct IntermediateFetchProcessTests {
    static let host = "leafonly.atsproxy.test"

    /// A root, an intermediate the server leaves out, and a leaf naming `issuersURL`, with the hosts file.
    static func chain(_ factory: CertificateFactory, issuersURL: String) throws {
        _ = try factory.rootAndIntermediate()
        try factory.leafNamingIssuer(host: host, caIssuers: issuersURL)
        try "127.0.0.1 \(host)\n".write(toFile: factory.path("hosts"), atomically: true, encoding: .utf8)
    }

    static func daemon(_ factory: CertificateFactory, _ extra: [String] = []) throws -> DaemonProcess {
        try DaemonProcess(
            directory: factory.directory,
            [
                "--listen", "127.0.0.1:0", "--system-roots", "off", "--ca-file", factory.path("root.pem"),
                "--hosts-file", factory.path("hosts"), "--threads", "2",
            ] + extra)
    }

    static func connect(_ daemon: DaemonProcess, port: UInt16) throws -> CommandResult {
        try runCommand(
            "/usr/bin/curl",
            ["-sS", "-k", "--max-time", "20", "--proxy", "http://127.0.0.1:\(daemon.port)", "https://\(host):\(port)/"])
    }

    @Test("the intermediate is fetched once for two servers that leave it out, and each line says so")
    func fetched() throws {
        let factory = try CertificateFactory()
        let served = try CAIssuersServer(body: try factory.rootAndIntermediate())
        try factory.leafNamingIssuer(host: Self.host, caIssuers: served.url())
        try "127.0.0.1 \(Self.host)\n".write(toFile: factory.path("hosts"), atomically: true, encoding: .utf8)
        // Two servers (two ports: two verdicts), each sending the leaf alone.
        let first = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let second = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let daemon = try Self.daemon(factory)
        let results = try [first.port, second.port].map { try Self.connect(daemon, port: $0) }
        let lines = daemon.logLines(atLeast: 2)
        #expect(daemon.terminate() == 0)
        for (result, line) in zip(results, lines) {
            #expect(result.status == 0, "\(result.standardError)")
            #expect(line["action"] as? String == "allowed", "\(line)")
            let tls = line["tls"] as? [String: Any]
            #expect(tls?["trust"] as? String == "user_installed_root")
            let fetches = tls?["intermediate_fetches"] as? [[String: Any]]
            #expect(fetches?.count == 1, "\(line)")
            #expect(fetches?.first?["url"] as? String == served.url())
            #expect(fetches?.first?["result"] as? String == "fetched")
            #expect(fetches?.first?["certificates"] as? [String] == ["CN=inter"])
        }
        // One fetch for both: the second verdict joined the first's fetch or took its answer.
        #expect(served.requests.count == 1, "\(served.requests)")
        let cachedFlags = lines.compactMap {
            (($0["tls"] as? [String: Any])?["intermediate_fetches"] as? [[String: Any]])?.first?["cached"] as? Bool
        }
        #expect(cachedFlags.count == 2)
    }

    @Test("with --aia-fetch off the verdict is untrusted_chain, naming the missing intermediate and its URL")
    func off() throws {
        let factory = try CertificateFactory()
        let issuers = try CAIssuersServer(body: [0x30])
        try Self.chain(factory, issuersURL: issuers.url())
        let server = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let daemon = try Self.daemon(factory, ["--aia-fetch", "off"])
        _ = try Self.connect(daemon, port: server.port)
        let line = try #require(daemon.logLines(atLeast: 1).first)
        #expect(daemon.terminate() == 0)
        #expect(line["action"] as? String == "blocked")
        #expect(line["violations"] as? [String] == ["untrusted_chain"])
        let explanation = (line["explanations"] as? [String])?.first ?? ""
        #expect(explanation.contains("CN=inter"), "\(explanation)")
        #expect(explanation.contains(issuers.url()), "\(explanation)")
        #expect((line["tls"] as? [String: Any])?["intermediate_fetches"] == nil)
        #expect(issuers.requests.isEmpty)
    }

    @Test("a fetch that fails is on the line, and the violation names the failure")
    func failed() throws {
        let factory = try CertificateFactory()
        let issuers = try CAIssuersServer(body: Array("not here".utf8), status: "404 Not Found")
        try Self.chain(factory, issuersURL: issuers.url())
        let server = try TestTLSServer(directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"])
        let daemon = try Self.daemon(factory)
        _ = try Self.connect(daemon, port: server.port)
        let line = try #require(daemon.logLines(atLeast: 1).first)
        #expect(daemon.terminate() == 0)
        #expect(line["violations"] as? [String] == ["untrusted_chain"])
        let fetch = ((line["tls"] as? [String: Any])?["intermediate_fetches"] as? [[String: Any]])?.first
        #expect(fetch?["result"] as? String == "failed")
        #expect((fetch?["reason"] as? String)?.contains("404") == true, "\(String(describing: fetch))")
        let explanation = (line["explanations"] as? [String])?.first ?? ""
        #expect(explanation.contains("fetching \(issuers.url()) failed"), "\(explanation)")
    }

    @Test("intercept mode fetches the missing intermediate too, and the request goes through")
    func intercepted() throws {
        let fixture = try InterceptFixture(names: [Self.host])
        let factory = fixture.factory
        try factory.certificate("inter", issuer: "root", extensions: [], isCA: true)
        try factory.openssl(["x509", "-in", "inter.pem", "-outform", "DER", "-out", "inter.der"])
        let served = try CAIssuersServer(body: try factory.bytes("inter.der"))
        try factory.leafNamingIssuer(host: Self.host, caIssuers: served.url())
        let origin = try TestHTTPOrigin(
            directory: factory.directory, certificate: factory.path("leaf.pem"), key: factory.path("leaf.key"))
        let daemon = try fixture.daemon()
        let result = try fixture.curl(daemon, ["https://\(Self.host):\(origin.port)/hello"])
        let lines = daemon.logLines(atLeast: 2)
        #expect(daemon.terminate() == 0)
        #expect(result.status == 0, "\(result.standardError)")
        let connection = try #require(lines.first { $0["kind"] as? String == "connection" })
        #expect(connection["action"] as? String == "allowed", "\(connection)")
        let fetches = (connection["tls"] as? [String: Any])?["intermediate_fetches"] as? [[String: Any]]
        #expect(fetches?.first?["result"] as? String == "fetched", "\(connection)")
        #expect(served.requests.count == 1)
    }

    @Test(
        "a certificate cannot aim the proxy at loopback for a client beyond it: the fetch is refused under its rules",
        .enabled(if: WebAccessProcessTests.canMakeNamespaces, "needs root and ip(8) to make a network namespace"))
    func destinationRules() throws {
        let namespace = try WebAccessProcessTests.Namespace()
        let factory = try CertificateFactory()
        // The CA Issuers URL is on loopback; the server itself on the host's veth address, which the
        // namespace's client may reach.
        let served = try CAIssuersServer(body: try factory.rootAndIntermediate())
        try factory.leafNamingIssuer(host: Self.host, caIssuers: served.url())
        try "\(namespace.hostAddress) \(Self.host)\n".write(
            toFile: factory.path("hosts"), atomically: true, encoding: .utf8)
        let server = try TestTLSServer(
            directory: factory.directory, ["-cert", "leaf.pem", "-key", "leaf.key"], host: namespace.hostAddress)
        let daemon = try Self.daemon(
            factory,
            [
                "--listen", "\(namespace.hostAddress):0", "--allow-client", "\(namespace.namespaceAddress)/32",
                "--allow-client", "127.0.0.0/8",
            ])
        let remotePort = try #require(daemon.ports.last)
        _ = try runCommand(
            "/usr/sbin/ip",
            [
                "netns", "exec", namespace.name, "/usr/bin/curl", "-sS", "-k", "--max-time", "20", "--proxy",
                "http://\(namespace.hostAddress):\(remotePort)", "https://\(Self.host):\(server.port)/",
            ])
        // The same server for a loopback client: its rules allow the fetch.
        _ = try Self.connect(daemon, port: server.port)
        let lines = daemon.logLines(atLeast: 2)
        #expect(daemon.terminate() == 0)
        let remote = try #require(
            lines.first { ($0["client"] as? String)?.hasPrefix(namespace.namespaceAddress) == true })
        #expect(remote["violations"] as? [String] == ["untrusted_chain"], "\(remote)")
        let refused = ((remote["tls"] as? [String: Any])?["intermediate_fetches"] as? [[String: Any]])?.first
        #expect(refused?["result"] as? String == "failed")
        #expect((refused?["reason"] as? String)?.contains("refused") == true, "\(String(describing: refused))")
        let local = try #require(lines.first { ($0["client"] as? String)?.hasPrefix("127.0.0.1") == true })
        #expect(local["action"] as? String == "allowed", "\(local)")
        #expect(served.requests.count == 1, "only the loopback client's fetch reached it")
    }
}
