import ATSPolicy
import EventLoop
import Foundation
import ProxyCore
import TLSInspection
import TLSTestSupport
import Testing

/// A proxy on a real event loop thread, listening on 127.0.0.1 (a port the kernel picked), logging
/// to a file in the certificate factory's directory. Stopped with ``stop()``.
struct TestProxy {
    /// The event loops, the listening one first.
    let loops: [EventLoopThread]
    /// Each loop's connection counts, in the same order.
    let loads: [LoopLoad]
    let port: UInt16
    let logPath: String

    /// Starts a proxy with `policyXML` (the inside of the Info.plist's top dictionary) and the
    /// factory's `root.pem` as a user-installed anchor. `configure` adjusts the settings. With
    /// `loops` > 1 the first loop listens and a ``LoopBalancer`` with `keepBelow` spreads clients,
    /// as the daemon runs them. `listenHost` is the address to listen on (port 0); `hosts` stands
    /// for `--hosts-file`.
    static func start(
        _ factory: CertificateFactory, policyXML: String, mode: EnforcementMode = .enforce, loops loopCount: Int = 1,
        keepBelow: Int = LoopBalancer.defaultKeepBelow, listenHost: String = "127.0.0.1", hosts: HostsTable? = nil,
        maximumProbes: Int = 4096, configure: (inout ProxySettings) -> Void = { _ in }
    ) throws -> TestProxy {
        let policy = try PolicyLoader.load(
            bytes: Array("<plist version=\"1.0\"><dict>\(policyXML)</dict></plist>".utf8), file: "p.plist")
        let anchors = try TrustAnchors.loading(caFiles: [factory.path("root.pem")], systemRoots: false)
        let logPath = factory.path("proxy-\(UUID().uuidString).log")
        let log = try LogWriter(path: logPath)
        var settings = ProxySettings(policy: policy, mode: mode, handshakeTimeout: .seconds(5))
        settings.hosts = hosts
        configure(&settings)
        let probes = ProbeService(anchors: anchors, maximumInFlight: maximumProbes)
        let cache = VerdictCache<VerdictKey, ProbeResult>(timeToLiveMilliseconds: 300_000)
        let balancer = loopCount > 1 ? LoopBalancer(keepBelow: keepBelow) : nil
        let endpoints = [ListenEndpoint(address: try SocketAddress(parsing: "\(listenHost):0"))]
        let listening = ListeningAddresses()
        var loops: [EventLoopThread] = []
        var loads: [LoopLoad] = []
        var port: UInt16 = 0
        for index in 0..<loopCount {
            let (loop, info) = try EventLoopThread.start { [settings] base in
                let resolver = try DNSResolver(base: base)
                let server = try ProxyServer(
                    base: base, endpoints: endpoints, listens: index == 0, balancer: balancer, settings: settings,
                    probes: probes, cache: cache, log: log, resolver: resolver, listening: listening)
                return (keepAlive: server, info: (server.addresses.first?.port ?? 0, server.load))
            }
            loops.append(loop)
            loads.append(info.1)
            if index == 0 { port = info.0 }
        }
        return TestProxy(loops: loops, loads: loads, port: port, logPath: logPath)
    }

    func stop() { for loop in loops { loop.stop() } }

    /// The log's JSON lines, parsed.
    func logLines() throws -> [[String: Any]] {
        let text = try String(contentsOfFile: logPath, encoding: .utf8)
        return try text.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    /// The only log line, once it is written (a session logs when it ends, which can be a moment
    /// after the client has its answer); fails the test when there is not exactly one.
    func onlyLogLine(sourceLocation: Testing.SourceLocation = #_sourceLocation) throws -> [String: Any] {
        let lines = try waitForLogLines(1).map(\.fields)
        #expect(lines.count == 1, "expected one log line, got \(lines.count)", sourceLocation: sourceLocation)
        return try #require(lines.first, sourceLocation: sourceLocation)
    }

    /// curl through the proxy to `https://NAME:PORT/` (NAME resolved to 127.0.0.1 by curl), trusting
    /// the factory's root. Extra curl options go before the URL.
    func curlHTTPS(
        _ factory: CertificateFactory, name: String = "localhost", port: UInt16, options: [String] = []
    ) throws -> CommandResult {
        try runCommand(
            "/usr/bin/curl",
            [
                "-sS", "--max-time", "20", "--proxy", "http://127.0.0.1:\(self.port)", "--cacert",
                factory.path("root.pem"),
                "--resolve", "\(name):\(port):127.0.0.1",
            ] + options + ["https://\(name):\(port)/"])
    }
}

/// A root CA `root` and a compliant leaf `leaf` (serverAuth EKU, RSA-2048, SHA-256) for
/// `subjectAltNames`, localhost by default.
func compliantChain(subjectAltNames: [String] = ["DNS:localhost"]) throws -> CertificateFactory {
    let factory = try CertificateFactory()
    try factory.rootCA("root")
    try factory.certificate(
        "leaf", issuer: "root",
        extensions: ["subjectAltName=" + subjectAltNames.joined(separator: ","), "extendedKeyUsage=serverAuth"])
    return factory
}

/// Full ATS for localhost: an exception entry with no keys (the local-host exemption is off).
let fullATSForLocalhost = "<key>NSExceptionDomains</key><dict><key>localhost</key><dict/></dict>"

/// Cleartext allowed for localhost, full ATS otherwise.
let insecureLocalhost = """
    <key>NSExceptionDomains</key><dict><key>localhost</key><dict>\
    <key>NSExceptionAllowsInsecureHTTPLoads</key><true/></dict></dict>
    """
